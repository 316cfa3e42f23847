package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// maxDepth bounds the nesting a body may have.
const maxDepth = 64

// member is one member of an object: its key and value as written.
type member struct{ key, value []byte }

// members splits the JSON object b into its members, allowing what
// fastjson writes and encoding/json refuses: keys that are objects (a
// MessageQueue) or bare numbers.
func members(b []byte) ([]member, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, fmt.Errorf("%w: an object must start with '{'", ErrBadBody)
	}
	i = skipWS(b, i+1)
	var out []member
	if i < len(b) && b[i] == '}' {
		if skipWS(b, i+1) != len(b) {
			return nil, fmt.Errorf("%w: data after the object", ErrBadBody)
		}
		return out, nil
	}
	for {
		kEnd, err := valueEnd(b, i, 0)
		if err != nil {
			return nil, err
		}
		key := b[i:kEnd]
		i = skipWS(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return nil, fmt.Errorf("%w: ':' expected at %d", ErrBadBody, i)
		}
		i = skipWS(b, i+1)
		vEnd, err := valueEnd(b, i, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, member{key, b[i:vEnd]})
		i = skipWS(b, vEnd)
		if i >= len(b) {
			return nil, fmt.Errorf("%w: the object is not closed", ErrBadBody)
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			if skipWS(b, i+1) != len(b) {
				return nil, fmt.Errorf("%w: data after the object", ErrBadBody)
			}
			return out, nil
		default:
			return nil, fmt.Errorf("%w: ',' or '}' expected at %d", ErrBadBody, i)
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the value that starts at b[i]: a string, an
// object or array (balanced, strings skipped), or a literal.
func valueEnd(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: nested too deep", ErrBadBody)
	}
	if i >= len(b) {
		return 0, fmt.Errorf("%w: a value expected at the end", ErrBadBody)
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("%w: a string is not closed", ErrBadBody)
	case '{', '[':
		closing := byte('}')
		if b[i] == '[' {
			closing = ']'
		}
		j := skipWS(b, i+1)
		if j < len(b) && b[j] == closing {
			return j + 1, nil
		}
		for {
			end, err := valueEnd(b, j, depth+1)
			if err != nil {
				return 0, err
			}
			j = skipWS(b, end)
			if j < len(b) && b[j] == ':' && closing == '}' {
				if end, err = valueEnd(b, skipWS(b, j+1), depth+1); err != nil {
					return 0, err
				}
				j = skipWS(b, end)
			}
			if j >= len(b) {
				return 0, fmt.Errorf("%w: %q is not closed", ErrBadBody, closing)
			}
			if b[j] == closing {
				return j + 1, nil
			}
			if b[j] != ',' {
				return 0, fmt.Errorf("%w: ',' expected at %d", ErrBadBody, j)
			}
			j = skipWS(b, j+1)
		}
	default:
		j := i
		for j < len(b) && !bytes.ContainsRune([]byte(",:}] \t\r\n"), rune(b[j])) {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("%w: a value expected at %d", ErrBadBody, i)
		}
		return j, nil
	}
}

// field returns the value of the member called name, or nil.
func field(ms []member, name string) []byte {
	for _, m := range ms {
		var k string
		if json.Unmarshal(m.key, &k) == nil && k == name {
			return m.value
		}
	}
	return nil
}

// decodeQueueMap reads an object keyed by MessageQueue objects (or, from
// a standard-JSON writer, by their JSON text as strings), each value
// decoded by val.
func decodeQueueMap[V any](b []byte, val func([]byte) (V, error)) (map[MessageQueue]V, error) {
	if b == nil || string(b) == "null" {
		return map[MessageQueue]V{}, nil
	}
	ms, err := members(b)
	if err != nil {
		return nil, err
	}
	out := make(map[MessageQueue]V, len(ms))
	for _, m := range ms {
		key := m.key
		if len(key) > 0 && key[0] == '"' {
			var s string
			if err := json.Unmarshal(key, &s); err != nil {
				return nil, fmt.Errorf("%w: queue key: %w", ErrBadBody, err)
			}
			key = []byte(s)
		}
		var q MessageQueue
		if err := json.Unmarshal(key, &q); err != nil {
			return nil, fmt.Errorf("%w: queue key %.100q: %w", ErrBadBody, key, err)
		}
		v, err := val(m.value)
		if err != nil {
			return nil, err
		}
		out[q] = v
	}
	return out, nil
}

func decodeJSON[V any](b []byte) (V, error) {
	var v V
	if err := fastjson.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%w: %w", ErrBadBody, err)
	}
	return v, nil
}

func decodeFloat(b []byte) (float64, error) {
	if b == nil {
		return 0, nil
	}
	return decodeJSON[float64](b)
}

// DecodeConsumeStats reads a ConsumeStats written by a Java or Go broker.
func DecodeConsumeStats(b []byte) (*ConsumeStats, error) {
	ms, err := members(b)
	if err != nil {
		return nil, err
	}
	c := &ConsumeStats{}
	if c.ConsumeTps, err = decodeFloat(field(ms, "consumeTps")); err != nil {
		return nil, err
	}
	if c.OffsetTable, err = decodeQueueMap(field(ms, "offsetTable"), decodeJSON[OffsetWrapper]); err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeTopicStatsTable reads a TopicStatsTable.
func DecodeTopicStatsTable(b []byte) (*TopicStatsTable, error) {
	ms, err := members(b)
	if err != nil {
		return nil, err
	}
	t := &TopicStatsTable{}
	if t.TopicPutTps, err = decodeFloat(field(ms, "topicPutTps")); err != nil {
		return nil, err
	}
	if t.OffsetTable, err = decodeQueueMap(field(ms, "offsetTable"), decodeJSON[TopicOffset]); err != nil {
		return nil, err
	}
	return t, nil
}

// DecodeResetOffsetBody reads a ResetOffsetBody.
func DecodeResetOffsetBody(b []byte) (*ResetOffsetBody, error) {
	ms, err := members(b)
	if err != nil {
		return nil, err
	}
	r := &ResetOffsetBody{}
	if r.OffsetTable, err = decodeQueueMap(field(ms, "offsetTable"), decodeJSON[int64]); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeGetConsumerStatusBody reads a GetConsumerStatusBody: a broker's
// answer, or a client's answer to GET_CONSUMER_STATUS_FROM_CLIENT (which
// fills MessageQueueTable only).
func DecodeGetConsumerStatusBody(b []byte) (*GetConsumerStatusBody, error) {
	ms, err := members(b)
	if err != nil {
		return nil, err
	}
	g := &GetConsumerStatusBody{ConsumerTable: map[string]map[MessageQueue]int64{}}
	if g.MessageQueueTable, err = decodeQueueMap(field(ms, "messageQueueTable"), decodeJSON[int64]); err != nil {
		return nil, err
	}
	if ct := field(ms, "consumerTable"); ct != nil && string(ct) != "null" {
		clients, err := members(ct)
		if err != nil {
			return nil, err
		}
		for _, c := range clients {
			var id string
			if err := json.Unmarshal(c.key, &id); err != nil {
				return nil, fmt.Errorf("%w: client id: %w", ErrBadBody, err)
			}
			if g.ConsumerTable[id], err = decodeQueueMap(c.value, decodeJSON[int64]); err != nil {
				return nil, err
			}
		}
	}
	return g, nil
}
