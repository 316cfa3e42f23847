package fastjson

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriter_RawKeyAndFloat(t *testing.T) {
	w := NewWriter(nil, false)
	w.BeginObject()
	w.RawKey([]byte(`{"q":0}`))
	w.Int(5)
	w.RawKey([]byte(`{"q":1}`))
	w.Float(2)
	w.Key("r")
	w.Float(0.25)
	w.End()
	require.Equal(t, `{{"q":0}:5,{"q":1}:2.0,"r":0.25}`, string(w.Bytes()))
	require.Panics(t, func() { NewWriter(nil, false).RawKey([]byte(`1`)) })
}

func TestAppendJavaDouble(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 12.5: "12.5", -3: "-3.0",
		math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity"} {
		require.Equal(t, want, string(AppendJavaDouble(nil, v)))
	}
}
