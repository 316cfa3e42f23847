package indexfile_test

import (
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/rocketstore/rocketstore/indexfile"
)

func Example() {
	root, err := os.MkdirTemp("", "store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	idx, err := indexfile.Open(filepath.Join(root, "index"), indexfile.Options{
		HashSlots:  1024, // small files for the example; 0 means RocketMQ's defaults
		MaxIndexes: 4096,
		OnFileFull: func(endTimestamp int64) {
			// save endTimestamp as the checkpoint's indexMsgTimestamp
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()

	// The dispatcher indexes each message stored in the CommitLog.
	const storeTime = 1_700_000_000_000
	if err := idx.Put("TopicTest", "order-1 customer-7", "7F00000100012A9F0000", 0, storeTime, 0); err != nil {
		log.Fatal(err)
	}
	if err := idx.Put("TopicTest", "order-2 customer-7", "7F00000100012A9F0001", 230, storeTime+1000, 0); err != nil {
		log.Fatal(err)
	}

	// A QUERY_MESSAGE for a key returns CommitLog offsets, newest first.
	offsets, err := idx.Query("TopicTest", "customer-7", 32, 0, math.MaxInt64)
	if err != nil {
		log.Fatal(err)
	}
	ts, phy := idx.LastUpdate()
	fmt.Println(offsets, ts, phy)
	// Output: [230 0] 1700000001000 230
}
