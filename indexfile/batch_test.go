package indexfile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

// randomMessages makes n messages for the index with few topics and keys
// (so slots and chains are shared, within a batch too), some with no keys,
// many keys (more than a batch holds), a rolled-back transaction or an
// offset already indexed.
func randomMessages(r *rand.Rand, n int) []Message {
	msgs := make([]Message, n)
	off, ts := int64(1000), int64(t0)
	for i := range msgs {
		off += int64(100 + r.IntN(300))
		ts += int64(r.IntN(1500))
		m := Message{Topic: fmt.Sprintf("T%d", r.IntN(3)), PhyOffset: off, StoreTimestamp: ts}
		if r.IntN(4) > 0 {
			m.UniqKey = fmt.Sprintf("U%d", r.IntN(50))
		}
		var keys []string
		for range r.IntN(4) {
			keys = append(keys, fmt.Sprintf("k%d", r.IntN(20)))
		}
		if r.IntN(40) == 0 {
			for j := range batchKeys + 5 {
				keys = append(keys, fmt.Sprintf("many%d", j))
			}
		}
		m.Keys = strings.Join(keys, strings.Repeat(" ", 1+r.IntN(2)))
		switch r.IntN(20) {
		case 0:
			m.SysFlag = message.TxRollback
		case 1:
			m.PhyOffset -= 1000 // below the end: already indexed
		}
		msgs[i] = m
	}
	return msgs
}

// filesOf reads the files of dir in name order.
func filesOf(t *testing.T, dir string) [][]byte {
	t.Helper()
	var files [][]byte
	for _, name := range fileNames(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		files = append(files, b)
	}
	return files
}

func TestService_PutBatch_SameBytesAsPut(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			msgs := randomMessages(r, 400)
			msgs = append(msgs, Message{Topic: "T0", UniqKey: "last", PhyOffset: 1 << 40, StoreTimestamp: t0 + 1e6})
			opts := Options{HashSlots: 8, MaxIndexes: 100 + r.IntN(300)} // files fill up inside batches

			one, batched := t.TempDir(), t.TempDir()
			s := mustOpen(t, one, opts)
			for _, m := range msgs {
				require.NoError(t, s.Put(m.Topic, m.Keys, m.UniqKey, m.PhyOffset, m.StoreTimestamp, m.SysFlag))
			}
			require.NoError(t, s.Close())
			s = mustOpen(t, batched, opts)
			for rest := msgs; len(rest) > 0; {
				n := min(len(rest), 1+r.IntN(40))
				require.NoError(t, s.PutBatch(rest[:n]))
				rest = rest[n:]
			}
			require.NoError(t, s.PutBatch(nil))
			last := msgs[len(msgs)-1]
			got, err := s.Query(last.Topic, last.UniqKey, 1, 0, forever)
			require.NoError(t, err)
			require.Equal(t, []int64{last.PhyOffset}, got)
			require.NoError(t, s.Close())

			a, b := filesOf(t, one), filesOf(t, batched)
			require.Greater(t, len(a), 1, "the test rolls files")
			require.Equal(t, len(a), len(b), "files")
			for i := range a {
				require.True(t, string(a[i]) == string(b[i]), "file %d differs", i)
			}
		})
	}
}

func TestService_PutBatch_DoesNotAllocate(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{HashSlots: 1024, MaxIndexes: 1 << 14})
	msgs := make([]Message, 32)
	var off int64
	allocs := testing.AllocsPerRun(100, func() {
		for i := range msgs {
			off += 100
			msgs[i] = Message{Topic: "TopicTest", Keys: "order-1 customer-7", UniqKey: "7F0000010001", PhyOffset: off, StoreTimestamp: t0 + off}
		}
		if err := s.PutBatch(msgs); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
