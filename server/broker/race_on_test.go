//go:build race

package broker

// raceEnabled: the race detector changes what allocates.
const raceEnabled = true
