package indexfile

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// TestService_ConcurrentPutQueryDelete runs one dispatcher, several readers
// and an expiry cleaner at once. Message i has key "k{i%10}" and offset
// i×100 + i%10, so a reader can check that every offset it gets belongs to
// its key. With memMapper the race detector also sees the file's bytes.
func TestService_ConcurrentPutQueryDelete(t *testing.T) {
	for _, m := range []struct {
		name   string
		mapper mappedfile.Mapper
	}{{"mmap", nil}, {"memory", memMapper{}}} {
		t.Run(m.name, func(t *testing.T) {
			const n, keys, readers = 3000, 10, 3
			s := mustOpen(t, t.TempDir(), Options{HashSlots: 8, MaxIndexes: 64, Mapper: m.mapper})
			var done atomic.Bool
			var wg sync.WaitGroup
			var queries atomic.Int64
			errs := make(chan error, readers+2)

			wg.Go(func() { // the dispatcher
				defer done.Store(true)
				for i := 1; i <= n; i++ {
					key := fmt.Sprintf("k%d", i%keys)
					if err := s.Put("T", key, "", int64(i*100+i%keys), t0+int64(i), 0); err != nil {
						errs <- err
						return
					}
				}
			})
			wg.Go(func() { // the cleaner keeps about the newest 1000 messages
				for !done.Load() {
					_, off := s.LastUpdate()
					if _, err := s.DeleteExpired(off - 1000*100); err != nil {
						errs <- err
						return
					}
				}
			})
			for r := range readers {
				wg.Go(func() {
					for i := 0; !done.Load() || i < 10; i++ {
						k := (i + r) % keys
						got, err := s.Query("T", fmt.Sprintf("k%d", k), 64, 0, forever)
						if err != nil {
							errs <- err
							return
						}
						queries.Add(1)
						if err := checkOffsets(got, k, keys); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Positive(t, queries.Load())

			// Once quiet, each key yields exactly its 64 newest offsets.
			for k := range keys {
				got := mustQuery(t, s, "T", fmt.Sprintf("k%d", k), 64, 0, forever)
				require.Len(t, got, 64)
				last := n - (n-k)%keys // the newest i with i%keys == k
				for j, off := range got {
					i := last - j*keys
					require.Equal(t, int64(i*100+k), off)
				}
			}
		})
	}
}

// checkOffsets reports an offset that is not of key k or out of order.
func checkOffsets(got []int64, k, keys int) error {
	for j, off := range got {
		if int(off%100) != k || off/100%int64(keys) != int64(k) {
			return fmt.Errorf("query for k%d returned offset %d of another key", k, off)
		}
		if j > 0 && off >= got[j-1] {
			return fmt.Errorf("query for k%d: offsets not newest first: %v", k, got)
		}
	}
	if len(got) > 64 {
		return fmt.Errorf("query for k%d returned %d offsets", k, len(got))
	}
	return nil
}
