package remoting

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServer_GateRefusesBeforeTheProcessor: a refused request is answered
// with the gate's response, its processor does not run (inline, raw and
// in-place codes alike), and the connection serves the next request.
func TestServer_GateRefusesBeforeTheProcessor(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	var ran atomic.Int32
	p := ProcessorFunc(func(_ context.Context, req *Request) *Command {
		ran.Add(1)
		return NewResponse(Success, "")
	})
	s.Register(SendMessage, p)
	s.RegisterWith(SendMessageV2, p, RegisterOptions{Inline: true, RawExt: true, Transient: true})
	var gated atomic.Int32
	s.SetGate(func(req *Request) *Command {
		gated.Add(1)
		if req.Ext("who") != "ok" || string(req.Body) != "b" {
			return NewResponse(NoPermission, "no")
		}
		return nil
	})
	addr := startServer(t, s)
	c := newClient(t, Options{})
	for _, code := range []int{SendMessage, SendMessageV2} {
		resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(code, map[string]string{"who": "bad"}, []byte("b")))
		require.NoError(t, err)
		require.Equal(t, NoPermission, resp.Code)
		require.Equal(t, "no", resp.Remark)
		require.Zero(t, ran.Load())
		resp, err = c.Invoke(timeoutCtx(t), addr, NewRequest(code, map[string]string{"who": "ok"}, []byte("b")))
		require.NoError(t, err)
		require.Equal(t, Success, resp.Code)
		require.EqualValues(t, 1, ran.Swap(0))
	}
	require.EqualValues(t, 4, gated.Load())
	require.Equal(t, 1, s.ConnCount(), "the refused requests' connection stays open")

	// An unknown code is not gated.
	resp, err := c.Invoke(timeoutCtx(t), addr, NewRequest(4242, nil, nil))
	require.NoError(t, err)
	require.Equal(t, RequestCodeNotSupported, resp.Code)
	require.EqualValues(t, 4, gated.Load())

	s.SetGate(nil)
	resp, err = c.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, map[string]string{"who": "bad"}, nil))
	require.NoError(t, err)
	require.Equal(t, Success, resp.Code)
}

// TestServer_CodesListsTheRegisteredCodes: dense and sparse codes, in
// order, without removed ones.
func TestServer_CodesListsTheRegisteredCodes(t *testing.T) {
	s := newServer(t, Options{})
	p := ProcessorFunc(func(context.Context, *Request) *Command { return nil })
	for _, code := range []int{PopMessage, SendMessage, 3001, PullMessage, HeartBeat} {
		s.Register(code, p)
	}
	s.Register(HeartBeat, nil)
	require.Equal(t, []int{SendMessage, PullMessage, 3001, PopMessage}, s.Codes())
}

// TestClient_BeforeRequestSeesEveryRequest: the hook changes requests
// before they are written, for calls and oneway sends.
func TestClient_BeforeRequestSeesEveryRequest(t *testing.T) {
	checkNoLeaks(t)
	s := newServer(t, Options{})
	got := make(chan string, 2)
	s.RegisterFunc(SendMessage, func(_ context.Context, req *Request) *Command {
		got <- req.Ext("signed")
		return NewResponse(Success, "")
	})
	addr := startServer(t, s)
	c := newClient(t, Options{BeforeRequest: func(cmd *Command) { cmd.SetExt("signed", "yes") }})
	_, err := c.Invoke(timeoutCtx(t), addr, NewRequest(SendMessage, nil, nil))
	require.NoError(t, err)
	require.Equal(t, "yes", recv(t, got))
	require.NoError(t, c.InvokeOneway(timeoutCtx(t), addr, NewRequest(SendMessage, nil, nil)))
	require.Equal(t, "yes", recv(t, got))
}
