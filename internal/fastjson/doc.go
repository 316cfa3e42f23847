// Package fastjson reads and writes JSON in the dialect of Alibaba
// fastjson 1.x, the serializer of Apache RocketMQ.
//
// fastjson writes the keys of a map with number keys (Map<Integer, Long>,
// Map<Long, String>) as bare numbers, which is not JSON:
//
//	{"offsetTable":{"TopicTest@cg":{0:123,1:456}}}
//
// Unmarshal reads that and standard JSON alike: QuoteIntKeys first turns
// the bare keys into strings, then encoding/json decodes the result, so
// Go maps with integer keys (map[int32]int64) fill from either form.
//
// Writer emits fastjson's form: compact, as RocketMQ sends bodies on the
// wire, or pretty, as RocketMQ writes its config files (ConfigManager
// persists with PrettyFormat):
//
//	{
//		"offsetTable":{
//			"TopicTest@cg":{0:123,1:456
//			}
//		}
//	}
//
// In the pretty form each object member is on its own line, indented by
// one tab per level; a map with number keys keeps its entries on one line
// and closes on the next; arrays (the Java Sets and primitive arrays
// RocketMQ's configs hold) stay on one line. Strings are escaped as
// fastjson escapes them.
package fastjson
