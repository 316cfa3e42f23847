package broker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

func TestSendHeader_V2ReadsByLongNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		ext  map[string]string
	}{
		{"v1", remoting.SendMessage, map[string]string{"producerGroup": "G", "topic": "T", "queueId": "3", "bornTimestamp": "42"}},
		{"v2", remoting.SendMessageV2, map[string]string{"a": "G", "b": "T", "e": "3", "g": "42"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := sendHeader(remoting.NewRequest(tc.code, tc.ext, nil))
			h.require("producerGroup", "topic", "queueId")
			require.NoError(t, h.err)
			require.Equal(t, "T", h.str("topic"))
			require.Equal(t, int32(3), h.int32("queueId", 0))
			require.Equal(t, int64(42), h.int64("bornTimestamp", 0))
			require.Equal(t, int32(16), h.int32("maxReconsumeTimes", 16))
			h.require("properties")
			require.ErrorContains(t, h.err, "properties is missing")
		})
	}
}
