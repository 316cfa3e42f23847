//go:build race

package remoting

// raceEnabled: the race detector slows the server about tenfold.
const raceEnabled = true
