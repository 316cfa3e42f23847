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
