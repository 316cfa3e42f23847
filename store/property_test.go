package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

// TestStore_Property_EveryPutReturnedOnceInOrder: for random interleavings
// of puts to random topics/queues, every put is returned once, in order, by
// GetMessage on its queue, and by QueryMessage on each of its keys.
func TestStore_Property_EveryPutReturnedOnceInOrder(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			opts := smallOptions()
			opts.IndexMaxEntries = 400
			s := openTestStore(t, t.TempDir(), opts)
			type put struct {
				topic string
				qid   int32
				body  string
				keys  []string
				qoff  int64
			}
			const writers = 6
			puts := make([][]put, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(w)))
					for i := range 40 + r.IntN(40) {
						p := put{
							topic: fmt.Sprintf("PT%d", r.IntN(3)),
							qid:   int32(r.IntN(3)),
							body:  fmt.Sprintf("w%d-%d-%s", w, i, string(make([]byte, r.IntN(300)))),
						}
						for k := range r.IntN(3) {
							p.keys = append(p.keys, fmt.Sprintf("k-%d-%d-%d", w, i, k))
						}
						var keys string
						for _, k := range p.keys {
							keys += k + " "
						}
						m := msg(p.topic, p.qid, p.body, "", keys)
						if r.IntN(4) == 0 {
							m.Properties = string(message.AppendProperty([]byte(m.Properties),
								message.PropertyUniqClientMessageIDKeyIndex, fmt.Sprintf("U%d-%d", w, i)))
							p.keys = append(p.keys, fmt.Sprintf("U%d-%d", w, i))
						}
						res, err := s.PutMessage(m)
						if err != nil {
							t.Error(err)
							return
						}
						p.qoff = res.QueueOffset
						puts[w] = append(puts[w], p)
					}
				})
			}
			wg.Wait()
			waitDispatched(t, s)

			type qkey struct {
				topic string
				qid   int32
			}
			byQueue := map[qkey]map[int64]put{}
			for _, ps := range puts {
				for _, p := range ps {
					k := qkey{p.topic, p.qid}
					if byQueue[k] == nil {
						byQueue[k] = map[int64]put{}
					}
					_, dup := byQueue[k][p.qoff]
					require.False(t, dup, "queue offset %d given twice", p.qoff)
					byQueue[k][p.qoff] = p
				}
			}
			for k, want := range byQueue {
				var got []string
				for off := int64(0); ; {
					r := s.GetMessage("g", k.topic, k.qid, off, 5, nil)
					if r.Status != Found {
						require.Equal(t, OffsetOverflowOne, r.Status)
						r.Release()
						break
					}
					off = r.NextBeginOffset
					got = append(got, bodies(t, r)...)
				}
				require.Len(t, got, len(want))
				for i, body := range got {
					require.Equal(t, want[int64(i)].body, body, "%v offset %d", k, i)
				}
			}
			for _, ps := range puts {
				for _, p := range ps {
					for _, key := range p.keys {
						r, err := s.QueryMessage(p.topic, key, 64, 0, 1<<62)
						require.NoError(t, err)
						require.Len(t, r.Messages, 1, "key %s", key)
						rec, err := message.Parse(r.Messages[0].Bytes())
						require.NoError(t, err)
						require.Equal(t, p.body, string(rec.Body()))
						r.Release()
					}
				}
			}
		})
	}
}
