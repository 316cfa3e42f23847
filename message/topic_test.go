package message

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateTopic(t *testing.T) {
	for _, tc := range []struct {
		topic string
		ok    bool
	}{
		{"TopicTest", true},
		{"a-b_c|d%e09", true},
		{"%RETRY%group", true},
		{strings.Repeat("t", MaxTopicNameLen), true},
		{"%RETRY%" + strings.Repeat("g", MaxRetryTopicNameLen-7), true},
		{"%DLQ%" + strings.Repeat("g", MaxRetryTopicNameLen-5), true},
		{"", false},
		{" ", false},
		{"topic.name", false},
		{"topic name", false},
		{"标签", false},
		{"topic\x00", false},
		{strings.Repeat("t", MaxTopicNameLen+1), false},
		{"%RETRY%" + strings.Repeat("g", MaxRetryTopicNameLen-6), false},
		{"%LMQ%" + strings.Repeat("g", MaxTopicNameLen-4), false},
	} {
		err := ValidateTopic(tc.topic)
		if tc.ok {
			require.NoError(t, err, "%q", tc.topic)
		} else {
			require.ErrorIs(t, err, ErrBadTopic, "%q", tc.topic)
		}
	}
}
