package ha

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func encodeFrame(offset int64, body []byte) []byte {
	b := make([]byte, headerSize+len(body))
	putHeader(b, offset, len(body))
	copy(b[headerSize:], body)
	return b
}

func TestDecodeFrame(t *testing.T) {
	good := encodeFrame(1<<30, []byte("records"))
	for _, tc := range []struct {
		name    string
		in      []byte
		wantN   int
		wantErr bool
	}{
		{"whole", good, len(good), false},
		{"heartbeat", encodeFrame(42, nil), headerSize, false},
		{"short header", good[:headerSize-1], 0, false},
		{"short body", good[:len(good)-1], 0, false},
		{"negative size", append(encodeFrame(0, nil)[:8], 0xff, 0xff, 0xff, 0xff), 0, true},
		{"huge size", append(encodeFrame(0, nil)[:8], 0x7f, 0, 0, 0), 0, true},
		{"negative offset", encodeFrame(-1, nil), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := decodeFrame(tc.in)
			require.Equal(t, tc.wantN, n)
			require.Equal(t, tc.wantErr, err != nil, "err %v", err)
		})
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add(encodeFrame(0, []byte("hello")))
	f.Add(encodeFrame(1<<20, nil))
	f.Add(append(encodeFrame(7, []byte("a")), encodeFrame(8, []byte("bc"))...))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			fr, n, err := decodeFrame(b) // must never panic
			if err != nil || n == 0 {
				return
			}
			if n != headerSize+len(fr.Body) || n > len(b) {
				t.Fatalf("frame length %d for a body of %d in %d bytes", n, len(fr.Body), len(b))
			}
			if !bytes.Equal(encodeFrame(fr.Offset, fr.Body), b[:n]) {
				t.Fatal("decode/encode round trip differs")
			}
			b = b[n:]
		}
	})
}
