package broker

import (
	"testing"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/filter"
	"github.com/rocketstore/rocketstore/store"
)

// TestHold_ArrivalWakesOnlyPullsItCanMatch: an arriving message wakes the
// held pulls of its queue (marks it dirty) only if one of their filters
// can match its tags code and properties, as RocketMQ's
// NotifyMessageArrivingListener asks the MessageFilter; a queue with no
// pull held, or whose pulls check has out, is woken as before.
func TestHold_ArrivalWakesOnlyPullsItCanMatch(t *testing.T) {
	sql, err := filter.Compile("a = '1' AND TAGS = 'TagA'")
	if err != nil {
		t.Fatal(err)
	}
	props := func(kv ...string) string {
		var p []byte
		for i := 0; i+1 < len(kv); i += 2 {
			p = message.AppendProperty(p, kv[i], kv[i+1])
		}
		return string(p)
	}
	k := holdKey{"T", 0}
	arrival := func(tag string, kv ...string) store.Arrival {
		return store.Arrival{Topic: k.topic, QueueID: k.queueID, TagsCode: message.TagsCode(tag),
			Properties: props(append([]string{message.PropertyTags, tag}, kv...)...)}
	}
	for _, tc := range []struct {
		name    string
		filters []store.Filter // of the pulls held for k; nil: none held
		checked bool           // check has k's pulls out
		a       store.Arrival
		wake    bool
	}{
		{"tag matches", []store.Filter{tagFilter("TagA || TagB")}, false, arrival("TagB"), true},
		{"tag does not match", []store.Filter{tagFilter("TagA || TagB")}, false, arrival("TagC"), false},
		{"sql matches", []store.Filter{sqlFilter{sql}}, false, arrival("TagA", "a", "1"), true},
		{"sql does not match", []store.Filter{sqlFilter{sql}}, false, arrival("TagA", "a", "2"), false},
		{"sql, property missing", []store.Filter{sqlFilter{sql}}, false, arrival("TagA"), false},
		{"one of two matches", []store.Filter{sqlFilter{sql}, tagFilter("TagC")}, false, arrival("TagC"), true},
		{"no filter", []store.Filter{sqlFilter{sql}, nil}, false, arrival("TagC"), true},
		{"none held", nil, false, arrival("TagC"), true},
		{"being checked", []store.Filter{tagFilter("TagA")}, true, arrival("TagC"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &holdService{held: map[holdKey][]*pullRequest{}, dirty: map[holdKey]struct{}{}, wake: make(chan struct{}, 1)}
			h.count.Add(1) // a pull held somewhere
			for _, f := range tc.filters {
				h.held[k] = append(h.held[k], &pullRequest{topic: k.topic, queueID: k.queueID, filter: f})
			}
			if tc.checked {
				h.checking, h.inCheck = k, true
			}
			h.arrived(tc.a)
			_, dirty := h.dirty[k]
			if dirty != tc.wake || len(h.wake) == 1 != tc.wake {
				t.Fatalf("dirty %v, wake signalled %v; want %v", dirty, len(h.wake) == 1, tc.wake)
			}
		})
	}
}
