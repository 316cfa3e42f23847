package broker

import (
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// header reads ext fields of a request, collecting the first parse error.
type header struct {
	ext map[string]string
	err error
}

func newHeader(c *remoting.Command) *header { return &header{ext: c.ExtFields} }

func (h *header) str(name string) string { return h.ext[name] }

func (h *header) int64(name string, def int64) int64 {
	v, ok := h.ext[name]
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
	v := h.ext[name]
	return v == "true"
}

// require records an error when a field is missing.
func (h *header) require(names ...string) {
	for _, n := range names {
		if _, ok := h.ext[n]; !ok && h.err == nil {
			h.err = fmt.Errorf("header field %s is missing", n)
		}
	}
}

// sendV2Names maps SendMessageRequestHeaderV2's one-letter fields to the
// long names of SendMessageRequestHeader.
var sendV2Names = [...][2]string{
	{"a", "producerGroup"}, {"b", "topic"}, {"c", "defaultTopic"}, {"d", "defaultTopicQueueNums"},
	{"e", "queueId"}, {"f", "sysFlag"}, {"g", "bornTimestamp"}, {"h", "flag"}, {"i", "properties"},
	{"j", "reconsumeTimes"}, {"k", "unitMode"}, {"l", "maxReconsumeTimes"}, {"m", "batch"}, {"n", "bname"},
}

// sendHeader returns the send header of a request in long names.
func sendHeader(c *remoting.Command) *header {
	if c.Code == remoting.SendMessage {
		return newHeader(c)
	}
	ext := make(map[string]string, len(sendV2Names))
	for _, p := range sendV2Names {
		if v, ok := c.ExtFields[p[0]]; ok {
			ext[p[1]] = v
		}
	}
	return &header{ext: ext}
}

func errResponse(code int, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}
