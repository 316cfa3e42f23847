package consumequeue_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/rocketstore/rocketstore/consumequeue"
)

func Example() {
	root, err := os.MkdirTemp("", "consumequeue")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	t, err := consumequeue.OpenTable(root, consumequeue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()

	// The dispatcher: one unit per message stored in the CommitLog.
	q, err := t.GetOrCreate("TopicTest", 0)
	if err != nil {
		log.Fatal(err)
	}
	for i := range int64(3) {
		u := consumequeue.Unit{Offset: i * 200, Size: 200, TagsCode: 42}
		if err := q.Put(u, i); err != nil {
			log.Fatal(err)
		}
	}

	// A pull request: read from the consumer's offset.
	units := make([]consumequeue.Unit, 32)
	n, err := t.Get("TopicTest", 0).Read(1, units)
	fmt.Println(n, err, units[:n])
	_, err = q.Read(q.MaxOffset(), units)
	fmt.Println(errors.Is(err, consumequeue.ErrOffsetOverflowOne))
	// Output:
	// 2 <nil> [{200 200 42} {400 200 42}]
	// true
}
