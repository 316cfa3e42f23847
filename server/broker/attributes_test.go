package broker

import (
	"maps"
	"testing"
)

func TestParseTopicAttributes(t *testing.T) {
	got, err := parseTopicAttributes("+message.type=FIFO, +x=1,-y")
	if err != nil || !maps.Equal(got, map[string]string{"message.type": "FIFO", "x": "1", "y": ""}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"message.type=FIFO", "+message.type=LIFO", "+=1", "-", "-a=b"} {
		if _, err := parseTopicAttributes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	m := mergeAttributes(map[string]string{"y": "2", "z": "3"}, got)
	if !maps.Equal(m, map[string]string{"message.type": "FIFO", "x": "1", "z": "3"}) {
		t.Fatal(m)
	}
}

func FuzzParseTopicAttributes(f *testing.F) {
	f.Add("+message.type=FIFO")
	f.Add("+a=b,+c=d,-e")
	f.Add("+message.type=LIFO")
	f.Add(",,-,+=")
	f.Fuzz(func(t *testing.T, s string) {
		attrs, err := parseTopicAttributes(s)
		if err != nil {
			return
		}
		if v, ok := attrs[AttrMessageType]; ok && v != "" && v != MessageTypeNormal && v != MessageTypeFIFO &&
			v != MessageTypeDelay && v != MessageTypeTransaction && v != MessageTypeMixed {
			t.Fatalf("%q: message type %q accepted", s, v)
		}
		for k := range attrs {
			if k == "" {
				t.Fatalf("%q: an empty key accepted", s)
			}
		}
	})
}
