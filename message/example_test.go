package message_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rocketstore/rocketstore/message"
)

// testNow is a fixed clock for the examples and tests.
var testNow = time.Date(2025, 9, 19, 12, 0, 0, 0, time.UTC)

func Example() {
	body := []byte("hello")
	m := &message.Message{
		Topic:      "TopicTest",
		Body:       body,
		BodyCRC:    message.BodyCRC(body),
		Properties: message.EncodeProperties(map[string]string{message.PropertyTags: "TagA", message.PropertyKeys: "k1 k2"}),
		BornHost:   netip.MustParseAddrPort("10.0.0.2:40000"),
		StoreHost:  netip.MustParseAddrPort("10.0.0.1:10911"),
	}

	// The CommitLog sizes the record, encodes it into its file under the put
	// lock and then patches the fields it only knows there.
	n, err := message.EncodedSize(m)
	if err != nil {
		panic(err)
	}
	file := make([]byte, 4096)
	message.Encode(file[:n], m)
	rec, err := message.Parse(file)
	if err != nil {
		panic(err)
	}
	rec.SetPhysicalOffset(0)
	rec.SetQueueOffset(0)
	rec.SetStoreTimestamp(testNow.UnixMilli())

	// A reader walks the file record by record.
	rec, err = message.Parse(file)
	if err != nil {
		panic(err)
	}
	tags, _ := message.LookupProperty(rec.Properties(), message.PropertyTags)
	keys, _ := message.LookupProperty(rec.Properties(), message.PropertyKeys)
	fmt.Println(rec.TotalSize(), string(rec.Topic()), string(rec.Body()), rec.CheckCRC())
	fmt.Println(string(tags), message.TagsCode(tags))
	for k := range message.Keys(keys) {
		fmt.Println("key", string(k))
	}
	fmt.Println(message.OffsetMsgID(rec.StoreHost(), rec.PhysicalOffset()))

	_, _, err = message.Decode(file[n:]) // zeros after the last record
	fmt.Println(err)
	// Output:
	// 126 TopicTest hello <nil>
	// TagA 2598919
	// key k1
	// key k2
	// 0A00000100002A9F0000000000000000
	// message: bad magic code 0x00000000: message: corrupt record
}
