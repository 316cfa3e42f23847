package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// The null broker is the ceiling of the official client's rows: a remoting
// server that answers every send at once with SUCCESS and stores nothing,
// and that is its own name server (a topic's route names itself). What the
// client and the remoting path cost per message, with no broker work at
// all, bounds what any broker can reach with the same client on the same
// cores.

// serveNull is the child process "compare serve-null": it prints its
// address on stdout and serves until SIGINT or SIGTERM.
func serveNull(args []string) error {
	fs := flag.NewFlagSet("serve-null", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s, err := remoting.NewServer(remoting.Options{})
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	route := fmt.Appendf(nil, `{"orderTopicConf":"","queueDatas":[{"brokerName":"null","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],`+
		`"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"null","brokerAddrs":{"0":%q}}],"filterServerTable":{}}`, addr)
	s.RegisterInline(remoting.GetRouteInfoByTopic, remoting.ProcessorFunc(func(context.Context, *remoting.Request) *remoting.Command {
		resp := remoting.NewResponse(remoting.Success, "")
		resp.Body = route
		return resp
	}))
	var offset atomic.Int64
	sent := remoting.ProcessorFunc(func(_ context.Context, req *remoting.Request) *remoting.Command {
		q := req.Ext("e") // SEND_MESSAGE_V2's queueId
		if req.Code == remoting.SendMessage {
			q = req.Ext("queueId")
		}
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtList = []string{"msgId", "7F00000100002A9F0000000000000000", "queueId", strings.Clone(q),
			"queueOffset", strconv.FormatInt(offset.Add(1), 10), "MSG_REGION", "DefaultRegion", "TRACE_ON", "true"}
		return resp
	})
	// As the broker reads sends: inline, the header's ext fields left raw,
	// the frame read in place.
	fast := remoting.RegisterOptions{Inline: true, RawExt: true, Transient: true}
	s.RegisterWith(remoting.SendMessage, sent, fast)
	s.RegisterWith(remoting.SendMessageV2, sent, fast)
	s.RegisterDefault(remoting.ProcessorFunc(func(context.Context, *remoting.Request) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "") // heartbeats, unregistrations
	}))
	go s.Serve(ln)
	fmt.Println(addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return s.Close()
}

// nullProcess is this program re-run as serve-null.
type nullProcess struct {
	*child
	addr string
}

func startNullProcess() (*nullProcess, error) {
	ch, addr, err := startSelf("null broker process", "serve-null")
	if err != nil {
		return nil, err
	}
	return &nullProcess{child: ch, addr: addr}, nil
}

// nullRows are the official client's SendSync rows against the null
// broker: the ceiling of rs.broker.send.p1 and .p16.
func nullRows(c *config, r *results) error {
	np, err := startNullProcess()
	if err != nil {
		return err
	}
	defer np.stop()
	ps, closeAll, err := rmqProducers(np.addr, 16)
	if err != nil {
		return err
	}
	defer closeAll()
	body := make([]byte, 1024)
	for _, n := range []int{1, 16} {
		topic := unique("BenchNull")
		smp, err := drive(c, np.pid(), n, true, sendSyncOps(ps, topic, body), nil)
		if err != nil {
			return err
		}
		smp.bytes = smp.ops * float64(len(body))
		r.add(row{id: fmt.Sprintf("ceil.goclient.send.p%d", n), group: group3, system: "ceiling", extraName: clientCPU,
			label: fmt.Sprintf("SendSync 1KiB, official Go client, %d producer(s), to a null broker (answers at once, stores nothing)", n)}, smp)
	}
	return nil
}
