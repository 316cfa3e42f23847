package broker

import (
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// header reads ext fields of a request, collecting the first parse error.
// Fields are named by their long names; short maps them to the names the
// request uses, if they differ.
type header struct {
	ext   map[string]string
	short map[string]string
	err   error
}

func newHeader(c *remoting.Command) *header { return &header{ext: c.ExtFields} }

// get returns the field called name in long names.
func (h *header) get(name string) (string, bool) {
	if s, ok := h.short[name]; ok {
		name = s
	}
	v, ok := h.ext[name]
	return v, ok
}

func (h *header) str(name string) string {
	v, _ := h.get(name)
	return v
}

func (h *header) int64(name string, def int64) int64 {
	v, ok := h.get(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && h.err == nil {
		h.err = fmt.Errorf("header field %s=%q is not an integer", name, v)
	}
	return n
}

func (h *header) int32(name string, def int32) int32 {
	n := h.int64(name, int64(def))
	if (n < -1<<31 || n > 1<<31-1) && h.err == nil {
		h.err = fmt.Errorf("header field %s=%d is out of range", name, n)
	}
	return int32(n)
}

func (h *header) bool(name string) bool {
	v, _ := h.get(name)
	return v == "true"
}

// require records an error when a field is missing.
func (h *header) require(names ...string) {
	for _, n := range names {
		if _, ok := h.get(n); !ok && h.err == nil {
			h.err = fmt.Errorf("header field %s is missing", n)
		}
	}
}

// sendV2Names maps the long names of SendMessageRequestHeader to
// SendMessageRequestHeaderV2's one-letter fields (for replies; sends read
// theirs with decodeSendHeader).
var sendV2Names = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
	"queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
	"reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}

func errResponse(code int, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}
