package fastjson

import "encoding/json"

// QuoteObjectKeys rewrites the object keys fastjson writes for maps keyed
// by a Java bean (Map<MessageQueue, Long> in ResetOffsetBody, ConsumeStats,
// TopicStatsTable), which are not JSON:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12}}
//
// as JSON strings holding the key's text, so encoding/json can decode the
// map as map[string]T and each key be decoded on its own:
//
//	{"offsetTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":12}}
//
// Everything else is left as it is. It returns b itself when there is
// nothing to rewrite, and a new slice otherwise; b is never modified.
// Malformed input is returned with what could be rewritten; decoding it
// then fails in encoding/json.
func QuoteObjectKeys(b []byte) []byte {
	var out []byte
	copied := 0
	var stack []byte // open containers: '{' or '['
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
			continue
		case '[':
			stack = append(stack, '[')
			continue
		case ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		case '{':
			stack = append(stack, '{')
		case ',':
			if len(stack) == 0 || stack[len(stack)-1] != '{' {
				continue
			}
		default:
			continue
		}
		// A key comes next: is it an object?
		j := skipSpace(b, i+1)
		if j >= len(b) || b[j] != '{' {
			continue
		}
		end := skipObject(b, j)
		if end < 0 {
			break
		}
		if e := skipSpace(b, end); e >= len(b) || b[e] != ':' {
			continue
		}
		key, _ := json.Marshal(string(b[j:end])) // a string always encodes
		out = append(out, b[copied:j]...)
		out = append(out, key...)
		copied = end
		i = end - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[copied:]...)
}

// skipString returns the index just past the string whose opening quote
// is at b[i], or len(b) if it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipObject returns the index just past the object or array opening at
// b[i], or -1 if it does not close.
func skipObject(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
