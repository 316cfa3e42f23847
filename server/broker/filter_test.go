package broker

import (
	"net/netip"
	"testing"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/filter"
)

func encodedRecord(tb testing.TB, props ...string) []byte {
	tb.Helper()
	var p []byte
	for i := 0; i+1 < len(props); i += 2 {
		p = message.AppendProperty(p, props[i], props[i+1])
	}
	m := &message.Message{Topic: "TopicTest", Body: make([]byte, 1024), Properties: string(p),
		BornHost: netip.MustParseAddrPort("127.0.0.1:5000"), StoreHost: netip.MustParseAddrPort("127.0.0.1:10911")}
	rec, err := message.AppendEncode(nil, m)
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

var producerProps = []string{
	"UNIQ_KEY", "7F0000011E8A18B4AAC2581CFF0B0000", "TAGS", "TagA", "KEYS", "order-1234",
	"WAIT", "true", "a", "5", "region", "us", "CLUSTER", "DefaultCluster",
}

func TestSQLFilter_MatchRecord(t *testing.T) {
	e, err := filter.Compile("a BETWEEN 1 AND 10 AND region IN ('eu', 'us') AND TAGS = 'TagA'")
	if err != nil {
		t.Fatal(err)
	}
	f := sqlFilter{e}
	if !f.MatchTagsCode(0) || !f.MatchTagsCode(message.TagsCode("TagZ")) {
		t.Fatal("an SQL92 filter must pass every tags code")
	}
	if !f.MatchRecord(encodedRecord(t, producerProps...)) {
		t.Fatal("no match")
	}
	if f.MatchRecord(encodedRecord(t, "a", "11", "region", "us", "TAGS", "TagA")) {
		t.Fatal("a = 11 matched")
	}
	rec := encodedRecord(t, producerProps...)
	if f.MatchRecord(rec[:len(rec)-3]) {
		t.Fatal("a torn record matched")
	}
}

// BenchmarkSQLFilter_MatchRecord is the broker's filter cost per message
// on the pull path: parse the stored record, find its properties, evaluate
// a three-term expression.
func BenchmarkSQLFilter_MatchRecord(b *testing.B) {
	e, err := filter.Compile("a BETWEEN 1 AND 10 AND region IN ('eu', 'us') AND TAGS = 'TagA'")
	if err != nil {
		b.Fatal(err)
	}
	f := sqlFilter{e}
	rec := encodedRecord(b, producerProps...)
	b.ReportAllocs()
	for b.Loop() {
		if !f.MatchRecord(rec) {
			b.Fatal("no match")
		}
	}
}
