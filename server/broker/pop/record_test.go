package pop

import (
	"errors"
	"reflect"
	"testing"
)

func TestRecord_RoundTrip(t *testing.T) {
	c := &ckRecord{group: "g", topic: "t", queueID: 2, popTime: 10, visibleAt: 20, offsets: []int64{3, 4}, attempts: []int32{1, 2}}
	got, err := parseRecord(c.encode())
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("ck: %+v, %v", got, err)
	}
	a := &ackRecord{group: "g", topic: "t", queueID: 2, popTime: 10, offset: 4}
	got, err = parseRecord(a.encode())
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("ack: %+v, %v", got, err)
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte("ck g t 0 10 20 3:1 4:2"))
	f.Add([]byte("ack g t 0 10 4"))
	f.Add([]byte("ck g t 0 10 20 3:0"))
	f.Add([]byte("ack g t -1 10 4"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRecord(body)
		if err != nil {
			if !errors.Is(err, errBadRecord) {
				t.Fatal(err)
			}
			return
		}
		var again any
		switch r := r.(type) {
		case *ckRecord:
			again, err = parseRecord(r.encode())
		case *ackRecord:
			again, err = parseRecord(r.encode())
		}
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%q: %+v then %+v, %v", body, r, again, err)
		}
	})
}
