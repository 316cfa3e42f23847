package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlags_JavaStyleOptions(t *testing.T) {
	f := newFlags("x")
	topic := f.str("t", "topic", "", "")
	order := f.str("o", "order", "false", "")
	list := f.sw("l", "list", "")
	require.NoError(t, f.parse([]string{"-t", " T ", "--order", "true", "-l"}))
	require.Equal(t, "T", *topic)
	require.Equal(t, "true", *order)
	require.True(t, *list)
	require.True(t, f.given("topic"))
	require.False(t, f.given("nothing"))

	f = newFlags("x")
	f.str("t", "topic", "", "")
	require.ErrorContains(t, f.parse([]string{"-t", "T", "extra"}), `unexpected argument "extra"`)
}

func TestParseTimestamp(t *testing.T) {
	ms, err := parseTimestamp("1700000000000")
	require.NoError(t, err)
	require.EqualValues(t, 1700000000000, ms)
	ms, err = parseTimestamp("2024-01-02#03:04:05:006")
	require.NoError(t, err)
	require.Equal(t, "2024-01-02 03:04:05,006", formatMillis(ms))
	_, err = parseTimestamp("yesterday")
	require.ErrorAs(t, err, new(usageError))
}

func TestRun_UsageErrorsExitTwo(t *testing.T) {
	var out, errOut bytes.Buffer
	getenv := func(string) string { return "" }
	require.Equal(t, 2, run(context.Background(), []string{"topicRoute", "-x"}, getenv, &out, &errOut))
	require.Contains(t, errOut.String(), "flag provided but not defined: -x")
	errOut.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"resetOffsetByTime", "-g", "g", "-t", "t", "-s", "soon", "-n", "127.0.0.1:1"}, getenv, &out, &errOut))
	require.Contains(t, errOut.String(), `option --timestamp: "soon"`)
	require.Equal(t, 0, run(context.Background(), []string{"help", "sendMessage"}, getenv, &out, &errOut))
	require.Contains(t, out.String(), "--count <arg>")
}
