package store_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

func Example() {
	dir, err := os.MkdirTemp("", "rocketstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(dir, store.Options{CommitLogFileSize: 1 << 20, IndexHashSlots: 1024, IndexMaxEntries: 4096})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	props := message.AppendProperty(nil, message.PropertyTags, "TagA")
	props = message.AppendProperty(props, message.PropertyKeys, "order-1")
	put, err := s.PutMessage(&message.Message{Topic: "TopicTest", QueueID: 0, Body: []byte("hello"), Properties: string(props)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queue offset", put.QueueOffset)
	s.WaitDispatched(time.Second)

	got := s.GetMessage("GroupA", "TopicTest", 0, 0, 32, store.NewTagFilter("TagA"))
	for _, m := range got.Messages {
		rec, _ := message.Parse(m.Bytes())
		fmt.Println(got.Status, string(rec.Body()), "next", got.NextBeginOffset)
	}
	got.Release()

	found, err := s.QueryMessage("TopicTest", "order-1", 16, 0, time.Now().UnixMilli()+1000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("by key:", len(found.Messages))
	found.Release()
	// Output:
	// queue offset 0
	// FOUND hello next 1
	// by key: 1
}
