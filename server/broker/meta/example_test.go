package meta_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rocketstore/rocketstore/server/broker/meta"
)

func Example() {
	dir, _ := os.MkdirTemp("", "meta")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config")

	topics, err := meta.OpenTopics(filepath.Join(cfg, "topics.json"), meta.TopicsOptions{BrokerName: "broker-a"})
	if err != nil {
		panic(err)
	}
	// A producer sends to a topic the broker does not know: it is made from TBW102.
	tc, created, _ := topics.CreateInSendMessage("TopicTest", "TBW102", 4, 0)
	fmt.Println(tc.TopicName, tc.WriteQueueNums, tc.Perm, created)

	groups, _ := meta.OpenSubscriptionGroups(filepath.Join(cfg, "subscriptionGroup.json"), meta.SubscriptionGroupsOptions{})
	g, _ := groups.FindOrCreate("cg")
	fmt.Println(g.GroupName, g.RetryMaxTimes)

	offsets, _ := meta.OpenOffsets(filepath.Join(cfg, "consumerOffset.json"), nil)
	offsets.StartPersist(meta.DefaultOffsetPersistInterval)
	offsets.Commit("cg", "TopicTest", 0, 42)
	_ = offsets.Close() // persists
	data, _ := os.ReadFile(filepath.Join(cfg, "consumerOffset.json"))
	fmt.Printf("%s\n", data)
	// Output:
	// TopicTest 4 6 true
	// cg 16
	// {
	// 	"offsetTable":{
	// 		"TopicTest@cg":{0:42
	// 		}
	// 	}
	// }
}
