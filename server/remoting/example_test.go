package remoting_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// A server with two processors: one answers at once, one holds the request
// (a long-polling pull) and answers from another goroutine.
func Example() {
	s, err := remoting.NewServer(remoting.Options{})
	if err != nil {
		panic(err)
	}
	s.RegisterFunc(remoting.HeartBeat, func(ctx context.Context, req *remoting.Request) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "")
	})
	held := make(chan *remoting.Request, 1)
	s.RegisterFunc(remoting.PullMessage, func(ctx context.Context, req *remoting.Request) *remoting.Command {
		req.Defer() // answered later, by the hold service
		held <- req
		return nil
	})
	go func() { // the hold service: a message arrives
		req := <-held
		resp := remoting.NewResponse(remoting.PullNotFound, "no new message")
		resp.SetExt("nextBeginOffset", req.Ext("queueOffset"))
		req.Respond(resp)
	}()
	s.OnClose(func(c *remoting.Conn) { /* forget the clients of c */ })

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go s.Serve(l)
	defer s.Shutdown(context.Background())

	c, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, l.Addr().String(),
		remoting.NewRequest(remoting.PullMessage, map[string]string{"queueOffset": "42"}, nil))
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Code, resp.Remark, resp.Ext("nextBeginOffset"))
	// Output: 19 no new message 42
}
