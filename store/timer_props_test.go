package store

import (
	"maps"
	"testing"

	"github.com/rocketstore/rocketstore/message"
)

// FuzzAppendPropertiesExcept checks the copy against ParseProperties: the
// same entries but the dropped ones, whose values it returns.
func FuzzAppendPropertiesExcept(f *testing.F) {
	f.Add(message.EncodeProperties(map[string]string{"REAL_TOPIC": "T", "REAL_QID": "3", "KEYS": "a b", "TAGS": "x"}))
	f.Add("REAL_TOPIC\x01A\x02REAL_TOPIC\x01B\x02\x01bad\x02noval\x01\x02x\x01y\x01z")
	f.Add("")
	drop := []string{message.PropertyRealTopic, message.PropertyRealQueueID}
	f.Fuzz(func(t *testing.T, props string) {
		var vals [2]string
		out := string(appendPropertiesExcept(nil, props, drop, vals[:]))
		want := message.ParseProperties(props)
		for i, d := range drop {
			if vals[i] != want[d] {
				t.Fatalf("%s = %q, want %q", d, vals[i], want[d])
			}
			delete(want, d)
		}
		if got := message.ParseProperties(out); !maps.Equal(got, want) {
			t.Fatalf("copy of %q reads %v, want %v", props, got, want)
		}
	})
}
