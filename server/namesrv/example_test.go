package namesrv_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// A name server, a broker registering one topic, and a route lookup.
func Example() {
	s, err := namesrv.New(namesrv.Options{})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go s.Serve(l)
	defer s.Shutdown(context.Background())

	// The broker side: register every 30 s on one long-lived client.
	broker, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		panic(err)
	}
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = namesrv.Register(ctx, broker, l.Addr().String(), &namesrv.BrokerRegistration{
		ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: protocol.MasterID,
		BrokerAddr: "127.0.0.1:10911", HAServerAddr: "127.0.0.1:10912",
		Topics: protocol.TopicConfigSerializeWrapper{
			DataVersion: protocol.DataVersion{Counter: 1, Timestamp: time.Now().UnixMilli()},
			TopicConfigTable: map[string]protocol.TopicConfig{
				"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4,
					Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: "SINGLE_TAG"},
			},
		},
	})
	if err != nil {
		panic(err)
	}

	route, err := namesrv.GetRoute(ctx, broker, l.Addr().String(), "TopicTest")
	if err != nil {
		panic(err)
	}
	fmt.Println(route.BrokerDatas[0].BrokerAddrs[protocol.MasterID], route.QueueDatas[0].WriteQueueNums)
	// Output: 127.0.0.1:10911 4
}
