package clients_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/rocketstore/rocketstore/server/broker/clients"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// A broker wires a Manager into its remoting server, creating each
// consumer group's retry topic when the group heartbeats, and asks it for
// the members and subscriptions of a group.
func Example() {
	srv, err := remoting.NewServer(remoting.Options{})
	if err != nil {
		panic(err)
	}
	m := clients.New(clients.Options{
		OnConsumerHeartbeat: func(cd *clients.ConsumerData) (notify bool, err error) {
			// find or create the subscription group config of cd.GroupName,
			// create "%RETRY%"+cd.GroupName, return the config's
			// notifyConsumerIdsChangedEnable
			return true, nil
		},
	})
	m.Register(srv) // HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, close listener
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(l)
	defer func() {
		srv.Close() // first: no more requests or close events
		m.Close()
	}()

	// A consumer's heartbeat, as the Go client sends it.
	c, err := remoting.NewClient(remoting.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hb := `{"clientID":"10.0.0.1@app","producerDataSet":[],"consumerDataSet":[{"groupName":"cg",` +
		`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
		`"subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],` +
		`"codeSet":["97","98"],"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}]}`
	resp, err := c.Invoke(ctx, l.Addr().String(), remoting.NewRequest(remoting.HeartBeat, nil, []byte(hb)))
	if err != nil {
		panic(err)
	}
	fmt.Println("heartbeat:", resp.Code)

	fmt.Println("members:", m.ConsumerIDs("cg"))
	sub, _ := m.Subscription("cg", "T")
	fmt.Println("tags:", sub.Tags, "codes:", sub.Codes, "takes tag c:", sub.MatchesTag("c"))
	// Output:
	// heartbeat: 0
	// members: [10.0.0.1@app]
	// tags: [a b] codes: [97 98] takes tag c: false
}
