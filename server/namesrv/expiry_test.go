package namesrv_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/server/remoting/remotingtest"
)

// TestServer_SilentBrokerExpires runs a name server and two brokers over
// in-memory pipes on the fake clock of a synctest bubble. A broker that
// re-registers every 30 s stays; one that goes silent is dropped by the
// 5 s scan once 120 s have passed, and its connection is closed, as
// RouteInfoManager.scanNotActiveBroker does.
func TestServer_SilentBrokerExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := remotingtest.NewListener()
		// Connections never idle out here: only the scan may drop brokers.
		s, err := namesrv.New(namesrv.Options{Remoting: remoting.Options{IdleTimeout: -1}})
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() { served <- s.Serve(l) }()

		newBroker := func() *remoting.Client {
			c, err := remoting.NewClient(remoting.Options{Dial: l.Dial, IdleTimeout: -1})
			require.NoError(t, err)
			return c
		}
		steady, silent := newBroker(), newBroker()
		ctx := context.Background()
		reg := func(c *remoting.Client, name, addr string) {
			_, err := namesrv.Register(ctx, c, "ns", &namesrv.BrokerRegistration{
				ClusterName: "DefaultCluster", BrokerName: name, BrokerAddr: addr, HAServerAddr: addr,
				Topics: protocol.TopicConfigSerializeWrapper{TopicConfigTable: map[string]protocol.TopicConfig{
					"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
				}},
			})
			require.NoError(t, err)
		}
		brokers := func() []string {
			r, ok := s.Routes().TopicRoute("T")
			if !ok {
				return nil
			}
			var names []string
			for _, bd := range r.BrokerDatas {
				names = append(names, bd.BrokerName)
			}
			return names
		}

		start := time.Now()
		reg(steady, "steady", "10.0.0.1:10911")
		reg(silent, "silent", "10.0.0.2:10911")
		silentConn, err := silent.Conn(ctx, "ns")
		require.NoError(t, err)

		for time.Since(start) < 120*time.Second {
			time.Sleep(30 * time.Second)
			reg(steady, "steady", "10.0.0.1:10911")
		}
		synctest.Wait()
		require.Equal(t, []string{"silent", "steady"}, brokers(), "120 s is not yet too long")

		time.Sleep(5 * time.Second) // the next scan
		synctest.Wait()
		require.Equal(t, []string{"steady"}, brokers())
		select {
		case <-silentConn.Done(): // the name server closed it
		default:
			t.Fatal("the silent broker's connection is still open")
		}

		require.NoError(t, s.Shutdown(ctx))
		require.True(t, errors.Is(<-served, remoting.ErrServerClosed))
		require.NoError(t, steady.Close())
		require.NoError(t, silent.Close())
	})
}
