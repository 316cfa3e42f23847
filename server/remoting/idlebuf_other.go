//go:build !unix

package remoting

import "net"

// idleWaiter cannot wait without reading here: the caller just reads.
type idleWaiter struct{}

func newIdleWaiter(net.Conn) *idleWaiter { return &idleWaiter{} }

func (*idleWaiter) wait() (bool, error) { return false, nil }
