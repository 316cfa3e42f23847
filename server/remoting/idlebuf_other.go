//go:build !unix

package remoting

import "net"

// waitReadable cannot wait without reading here: the caller just reads.
func waitReadable(net.Conn) (bool, error) { return false, nil }
