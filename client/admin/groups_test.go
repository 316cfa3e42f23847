package admin

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

func TestConsumeResult_NameOrNumber(t *testing.T) {
	for in, want := range map[string]ConsumeResult{
		`{"consumeResult":"CR_LATER"}`: "CR_LATER",   // Java
		`{"consumeResult":0}`:          "CR_SUCCESS", // the Go client
		`{"consumeResult":4}`:          "CR_THROW_EXCEPTION",
	} {
		var r ConsumeDirectlyResult
		require.NoError(t, json.Unmarshal([]byte(in), &r), in)
		require.Equal(t, want, r.ConsumeResult, in)
	}
	for _, in := range []string{`{"consumeResult":9}`, `{"consumeResult":-1}`, `{"consumeResult":true}`} {
		require.Error(t, json.Unmarshal([]byte(in), new(ConsumeDirectlyResult)), in)
	}
}

func FuzzConsumeResult(f *testing.F) {
	for _, s := range []string{`"CR_SUCCESS"`, `3`, `-1`, `1e3`, `null`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ConsumeResult
		_ = r.UnmarshalJSON(b) // never panics
	})
}

func TestSignCommand_LeavesUniqueKeyQueryUnsignedAsOldClients(t *testing.T) {
	for _, version := range []int{remoting.DefaultVersion, 581, 600} {
		cmd := remoting.NewRequest(remoting.QueryMessage, map[string]string{"topic": "T", "key": "k", "_UNIQUE_KEY_QUERY": "true"}, nil)
		cmd.Version = version
		signCommand(cmd, "ak", "sk")
		require.Equal(t, "true", cmd.Ext("_UNIQUE_KEY_QUERY"))
		content, ak, sig, ok := auth.RemotingContent(cmd) // what the broker checks
		require.True(t, ok)
		require.Equal(t, "ak", ak)
		require.Equal(t, auth.Sign(content, "sk"), sig, "version %d", version)
	}
}
