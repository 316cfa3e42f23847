package clients_test

import (
	"fmt"
	"strconv"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/broker/clients"
)

// javaHashCode is Java's String.hashCode, written out independently of
// package message: 31*h + c over UTF-16 code units, in int32.
func javaHashCode(s string) int64 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return int64(h)
}

// goClientHashCode is what rocketmq-client-go puts in codeSet:
// 31*h + b over UTF-8 bytes.
func goClientHashCode(s string) int64 {
	var h int32
	for _, b := range []byte(s) {
		h = 31*h + int32(b)
	}
	return int64(h)
}

func TestSubscription_JavaTagCodes(t *testing.T) {
	// Known values of "x".hashCode() in Java.
	require.EqualValues(t, 857175, javaHashCode("标签"))
	require.EqualValues(t, 97, javaHashCode("a"))

	tags := []string{"a", "标签", "tag-😀", "Ünïcødé"}
	var tagsJSON, codesJSON string
	for i, tag := range tags {
		if i > 0 {
			tagsJSON += ","
			codesJSON += ","
		}
		tagsJSON += strconv.Quote(tag)
		codesJSON += strconv.Quote(strconv.FormatInt(goClientHashCode(tag), 10)) // as the Go client sends them
	}
	body := fmt.Sprintf(`{"clientID":"c@1","consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY",`+
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[`+
		`{"classFilterMode":false,"topic":"T","subString":"a || 标签 || tag-😀 || Ünïcødé","tagsSet":[%s],"codeSet":[%s],`+
		`"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}]}`, tagsJSON, codesJSON)

	e := newEnv(t, clients.Options{})
	cl := e.newClient(t, "c@1")
	cl.heartbeat(t, []byte(body))

	s, ok := e.m.Subscription("cg", "T")
	require.True(t, ok)
	require.Equal(t, "TAG", s.ExpressionType)
	require.False(t, s.MatchesAll())
	require.Len(t, s.Tags, len(tags))
	for _, tag := range tags {
		require.True(t, s.MatchesTag(tag), tag)
		require.True(t, s.MatchesTagsCode(javaHashCode(tag)), "Java code of %q", tag)
		if tag != "a" {
			require.NotEqual(t, javaHashCode(tag), goClientHashCode(tag), "the test needs codes that differ")
			require.False(t, s.MatchesTagsCode(goClientHashCode(tag)), "Go client code of %q must not be trusted", tag)
		}
	}
	for i, tag := range s.Tags {
		require.Equal(t, javaHashCode(tag), s.Codes[i], tag)
	}
	require.False(t, s.MatchesTag("b"))
	require.False(t, s.MatchesTag(""), "a message without tags")
	require.False(t, s.MatchesTagsCode(0))
	require.False(t, s.MatchesTagsCode(javaHashCode("b")))
}

func TestSubscription_Matching(t *testing.T) {
	e := newEnv(t, clients.Options{})
	cl := e.newClient(t, "c@1")
	sub := func(topic, expr, typ, tags string, classFilter bool) string {
		return fmt.Sprintf(`{"classFilterMode":%t,"topic":%q,"subString":%q,"tagsSet":%s,"codeSet":[],"subVersion":1,"expressionType":%q}`,
			classFilter, topic, expr, tags, typ)
	}
	cl.heartbeat(t, []byte(`{"clientID":"c@1","consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_ACTIVELY","messageModel":"CLUSTERING","subscriptionDataSet":[`+
		sub("all", "*", "TAG", "[]", false)+","+
		sub("empty", "", "", "null", false)+","+
		sub("untyped", "x || y", "", `["y","x","x",""]`, false)+","+
		sub("notags", " p||q ", "TAG", "[]", false)+","+
		sub("sql", "a > 1", "SQL92", "[]", false)+","+
		sub("class", "x", "TAG", `["x"]`, true)+
		`]}]}`))

	get := func(topic string) clients.Subscription {
		s, ok := e.m.Subscription("cg", topic)
		require.True(t, ok, topic)
		return s
	}
	for _, tc := range []struct {
		topic    string
		all      bool
		tags     []string
		exprType string
	}{
		{"all", true, nil, "TAG"},
		{"empty", true, nil, "TAG"},
		{"untyped", false, []string{"x", "y"}, "TAG"}, // "" is TAG; sorted, deduplicated, empty tags dropped
		{"notags", false, []string{"p", "q"}, "TAG"},  // tags from the expression when tagsSet is empty
		{"sql", false, nil, "SQL92"},
		{"class", true, []string{"x"}, "TAG"},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			s := get(tc.topic)
			require.Equal(t, tc.all, s.MatchesAll())
			require.Equal(t, tc.tags, s.Tags)
			require.Equal(t, tc.exprType, s.ExpressionType)
			require.Len(t, s.Codes, len(tc.tags))
			if tc.all || tc.exprType != "TAG" {
				require.True(t, s.MatchesTagsCode(12345))
				require.True(t, s.MatchesTag("anything"))
			}
		})
	}
	_, ok := e.m.Subscription("cg", "nope")
	require.False(t, ok)
	_, ok = e.m.Subscription("nogroup", "all")
	require.False(t, ok)
}
