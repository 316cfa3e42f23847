package broker

import (
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/stretchr/testify/require"
)

// newInternalBroker starts a broker that registers nowhere, for tests that
// look inside it.
func newInternalBroker(t *testing.T, opts Options) *Broker {
	t.Helper()
	opts.ListenAddr, opts.NoVIPChannel = "127.0.0.1:0", true
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	opts.Store.CommitLogFileSize = 16 << 20
	b, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	return b
}

// TestAuthRules_EveryServedCode: every request code the broker serves
// has a rule (none falls to the default), and each maps a request to the
// resources and actions Apache's DefaultAuthorizationContextBuilder and
// header annotations name ("super": Super users only).
func TestAuthRules_EveryServedCode(t *testing.T) {
	b := newInternalBroker(t, Options{ClusterName: "c1"})
	type req struct {
		ext  map[string]string
		body string
	}
	const hb = `{"clientID":"cid","consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"t","subString":"*"},{"topic":"%RETRY%g","subString":"*"}],"unitMode":false}],"producerDataSet":[{"groupName":"pg"}]}`
	const lock = `{"consumerGroup":"g","clientId":"cid","mqSet":[{"topic":"t","brokerName":"b","queueId":0},{"topic":"%RETRY%g","brokerName":"b","queueId":0}]}`
	tp := map[string]string{"topic": "t"}
	sub := "Group:g Sub"
	table := map[int][]struct {
		in   req
		want []string
	}{
		10:  {{req{ext: tp}, []string{"Topic:t Pub"}}, {req{ext: map[string]string{"topic": "%RETRY%g"}}, []string{sub}}},
		11:  {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{"Topic:t Sub", sub}}, {req{ext: map[string]string{"topic": "%RETRY%g", "consumerGroup": "g"}}, []string{sub}}},
		12:  {{req{ext: tp}, []string{"Topic:t Sub,Get"}}},
		14:  {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{"Topic:t Sub,Get", "Group:g Sub,Get"}}},
		15:  {{req{ext: map[string]string{"topic": "%RETRY%g", "consumerGroup": "g"}}, []string{"Group:g Sub,Update"}}},
		17:  {{req{ext: tp}, []string{"Topic:t Create"}}},
		18:  {{req{}, []string{"super"}}},
		21:  {{req{}, []string{"super"}}},
		25:  {{req{}, []string{"super"}}},
		26:  {{req{}, []string{"super"}}},
		28:  {{req{}, []string{"super"}}},
		29:  {{req{ext: tp}, []string{"Topic:t Get"}}},
		30:  {{req{ext: tp}, []string{"Topic:t Get"}}},
		31:  {{req{ext: map[string]string{"topic": "%RETRY%g"}}, []string{"Group:g Get"}}},
		32:  {{req{ext: tp}, []string{"Topic:t Get"}}},
		33:  {{req{ext: tp}, []string{"Topic:t Get"}}, {req{ext: map[string]string{"offset": "1"}}, []string{"super"}}},
		34:  {{req{body: hb}, []string{sub, "Topic:t Sub"}}, {req{body: `{"clientID":"c","producerDataSet":[{"groupName":"pg"}]}`}, nil}},
		35:  {{req{ext: map[string]string{"consumerGroup": "g"}}, []string{sub}}, {req{ext: map[string]string{"producerGroup": "pg"}}, nil}},
		36:  {{req{ext: map[string]string{"group": "g", "originTopic": "t"}}, []string{sub}}},
		37:  {{req{ext: map[string]string{"topic": "t"}}, []string{"Topic:t Pub"}}, {req{ext: map[string]string{"producerGroup": "pg"}}, nil}},
		38:  {{req{ext: map[string]string{"consumerGroup": "g"}}, []string{"Group:g Sub,Get"}}},
		41:  {{req{body: lock}, []string{sub, "Topic:t Sub"}}},
		42:  {{req{body: lock}, []string{sub, "Topic:t Sub"}}},
		43:  {{req{}, []string{"super"}}},
		45:  {{req{}, []string{"super"}}},
		46:  {{req{body: `{"clientId":"c","group":"g"}`}, []string{sub}}},
		200: {{req{}, []string{"super"}}},
		201: {{req{}, []string{"super"}}},
		202: {{req{ext: tp}, []string{"Topic:t Get"}}},
		203: {{req{ext: map[string]string{"consumerGroup": "g"}}, []string{"Group:g Get"}}},
		204: {{req{ext: map[string]string{"producerGroup": "pg"}}, []string{"Cluster:c1 Get"}}},
		207: {{req{ext: map[string]string{"groupName": "g"}}, []string{"Group:g Delete"}}},
		208: {{req{ext: map[string]string{"consumerGroup": "g", "topic": "t"}}, []string{"Group:g Get", "Topic:t Get"}}},
		215: {{req{ext: tp}, []string{"Topic:t Delete"}}},
		222: {{req{ext: map[string]string{"group": "g", "topic": "t"}}, []string{"Group:g Update", "Topic:t Update"}}},
		223: {{req{ext: map[string]string{"group": "g", "topic": "t"}}, []string{"Topic:t Get", "Group:g Get"}}},
		300: {{req{ext: tp}, []string{"Topic:t Get"}}},
		305: {{req{}, []string{"super"}}},
		307: {{req{ext: map[string]string{"consumerGroup": "g"}}, []string{"Group:g Get"}}},
		309: {{req{ext: map[string]string{"consumerGroup": "g", "topic": "t"}}, []string{sub, "Topic:t Sub"}}},
		310: {{req{ext: map[string]string{"a": "pg", "b": "t"}}, []string{"Topic:t Pub"}}, {req{ext: map[string]string{"a": "pg", "b": "%RETRY%g"}}, []string{sub}}},
		320: {{req{ext: map[string]string{"b": "t"}}, []string{"Topic:t Pub"}}},
		324: {{req{ext: tp}, []string{"Topic:t Pub"}}},
		325: {{req{ext: map[string]string{"b": "t"}}, []string{"Topic:t Pub"}}},
		351: {{req{ext: tp}, []string{"Topic:t Get"}}},
		352: {{req{ext: map[string]string{"group": "g"}}, []string{"Group:g Get"}}},
		361: {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{"Topic:t Sub", sub}}},
		200050: {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{sub, "Topic:t Sub"}},
			{req{ext: map[string]string{"topic": "%RETRY%g", "consumerGroup": "g"}}, []string{sub, sub}}},
		200051: {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{sub, "Topic:t Sub"}}},
		200053: {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{sub, "Topic:t Sub"}}},
		200054: {{req{ext: map[string]string{"topic": "t", "consumerGroup": "g"}}, []string{sub, "Topic:t Sub"}}},
		200151: {{req{body: `{"acks":[{"c":"g","t":"t","so":0,"q":0}]}`}, []string{sub, "Topic:t Sub"}}},
	}
	for code := 3001; code <= 3010; code++ {
		table[code] = append(table[code], struct {
			in   req
			want []string
		}{req{ext: map[string]string{"username": "u"}}, []string{"super"}})
	}
	for _, code := range b.srv.Codes() {
		_, ok := authRules[code]
		require.True(t, ok, "request code %d has no auth rule", code)
		cases, ok := table[code]
		require.True(t, ok, "request code %d is not in the table", code)
		for _, tc := range cases {
			cmd := remoting.NewRequest(code, tc.in.ext, []byte(tc.in.body))
			checks, err := b.authChecks(&remoting.Request{Command: cmd}, auth.ReadFields(cmd))
			require.NoError(t, err, "code %d", code)
			var got []string
			for _, c := range checks {
				if c.SuperOnly {
					got = append(got, "super")
				} else {
					got = append(got, c.Resource.String()+" "+c.Actions.String())
				}
			}
			require.Equal(t, tc.want, got, "code %d %v", code, tc.in)
		}
	}
	checks, err := b.authChecks(&remoting.Request{Command: remoting.NewRequest(4242, nil, nil)}, auth.Fields{})
	require.NoError(t, err)
	require.True(t, len(checks) == 1 && checks[0].SuperOnly, "a code without a rule is for Super users only")
	_, err = b.authChecks(&remoting.Request{Command: remoting.NewRequest(remoting.HeartBeat, nil, []byte("{bad"))}, auth.Fields{})
	require.Error(t, err, "an unreadable body is refused")
}
