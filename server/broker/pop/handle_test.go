package pop

import (
	"errors"
	"testing"
)

func TestHandle_RoundTripAndApacheShape(t *testing.T) {
	h := Handle{StartOffset: 5, RetrieveTime: 1700000000000, InvisibleTime: 30000, ReviveQueueID: 0,
		TopicType: TopicTypeNormal, BrokerName: "broker-a", QueueID: 3, Offset: 7, CommitLogOffset: 1234}
	s := h.String()
	if s != "5 1700000000000 30000 0 0 broker-a 3 7 1234" {
		t.Fatalf("encoded %q", s)
	}
	got, err := ParseHandle(s)
	if err != nil || got != h {
		t.Fatalf("parse %q: %+v, %v", s, got, err)
	}
	h.CommitLogOffset = -1
	if got, err := ParseHandle("5 1700000000000 30000 0 0 broker-a 3 7"); err != nil || got != h {
		t.Fatalf("8 fields: %+v, %v", got, err)
	}
	if h.NextVisibleTime() != 1700000030000 {
		t.Fatal(h.NextVisibleTime())
	}
}

func TestHandle_Malformed(t *testing.T) {
	for _, s := range []string{"", "x", "1 2 3 4 0 b 1", "1 2 3 4 0 b 1 2 3 4", "a 2 3 4 0 b 1 2",
		"1 2 3 4 9 b 1 2", "1 2 3 4 0  1 2", "-1 2 3 4 0 b 1 2", "1 2 3 4 0 b 99999999999 2",
		"1 99999999999999999 3 4 0 b 1 2"} {
		if _, err := ParseHandle(s); !errors.Is(err, ErrBadHandle) {
			t.Errorf("%q: err %v, want ErrBadHandle", s, err)
		}
	}
}

func FuzzParseHandle(f *testing.F) {
	f.Add("5 1700000000000 30000 0 0 broker-a 3 7 1234")
	f.Add("5 1700000000000 30000 0 1 broker-a 3 7")
	f.Add("0 0 0 0 2 b 0 0 0")
	f.Add("1 2 3 4 0  1 2")
	f.Add(" ")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHandle(s)
		if err != nil {
			if !errors.Is(err, ErrBadHandle) {
				t.Fatalf("error %v does not wrap ErrBadHandle", err)
			}
			return
		}
		again, err := ParseHandle(h.String())
		if err != nil || again != h {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, h, h.String(), again, err)
		}
	})
}
