package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/indexfile"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

// smallOptions keep every file small, so tests cross file boundaries.
func smallOptions() Options {
	return Options{
		CommitLogFileSize:     64 << 10,
		ConsumeQueueFileUnits: 10,
		IndexHashSlots:        16,
		IndexMaxEntries:       40,
		StoreHost:             netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

func openTestStore(t *testing.T, dir string, opts Options) *MessageStore {
	t.Helper()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// msg builds a message with a tag (may be empty) and KEYS.
func msg(topic string, queueID int32, body string, tag string, keys string) *message.Message {
	var props []byte
	if tag != "" {
		props = message.AppendProperty(props, message.PropertyTags, tag)
	}
	if keys != "" {
		props = message.AppendProperty(props, message.PropertyKeys, keys)
	}
	return &message.Message{
		Topic:         topic,
		QueueID:       queueID,
		Body:          []byte(body),
		Properties:    string(props),
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      netip.MustParseAddrPort("127.0.0.1:40000"),
	}
}

func mustPut(t *testing.T, s *MessageStore, m *message.Message) PutResult {
	t.Helper()
	res, err := s.PutMessage(m)
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status)
	return res
}

func waitDispatched(t *testing.T, s *MessageStore) {
	t.Helper()
	require.True(t, s.WaitDispatched(5*time.Second), "dispatch did not catch up")
}

// bodies returns the bodies of a GetResult's records and releases it.
func bodies(t *testing.T, r *GetResult) []string {
	t.Helper()
	defer r.Release()
	var out []string
	for _, sl := range r.Messages {
		rec, err := message.Parse(sl.Bytes())
		require.NoError(t, err)
		require.Len(t, sl.Bytes(), len(rec), "each slice is exactly one record")
		out = append(out, string(rec.Body()))
	}
	return out
}

func TestStore_PutGet_Visible(t *testing.T) {
	s := openTestStore(t, t.TempDir(), smallOptions())
	res := mustPut(t, s, msg("TopicA", 0, "hello", "TagA", "k1"))
	require.Equal(t, int64(0), res.QueueOffset)
	deadline := time.Now().Add(time.Second)
	for s.GetMaxOffsetInQueue("TopicA", 0) == 0 {
		require.True(t, time.Now().Before(deadline), "a put is visible within milliseconds")
		time.Sleep(time.Millisecond)
	}
	r := s.GetMessage("g", "TopicA", 0, 0, 32, nil)
	require.Equal(t, Found, r.Status)
	require.Equal(t, int64(1), r.NextBeginOffset)
	require.Equal(t, []string{"hello"}, bodies(t, r))
}

// A put dispatches its own record before it returns (after its flush under
// SYNC_FLUSH): a single producer reads every message back at once, and
// queries it by key, without waiting for the reput goroutine.
func TestStore_PutIsDispatchedBeforeItReturns(t *testing.T) {
	for name, flush := range map[string]FlushDiskType{"async": AsyncFlush, "sync": SyncFlush} {
		t.Run(name, func(t *testing.T) {
			opts := smallOptions()
			opts.FlushDiskType = flush
			s := openTestStore(t, t.TempDir(), opts)
			for i := range 50 { // ConsumeQueue, CommitLog and index files all roll over
				body := fmt.Sprintf("message %d %s", i, strings.Repeat("x", 2000))
				res := mustPut(t, s, msg("TopicA", 0, body, "TagA", fmt.Sprintf("key-%d", i)))
				require.Equal(t, res.QueueOffset+1, s.GetMaxOffsetInQueue("TopicA", 0), "put %d", i)
				r := s.GetMessage("g", "TopicA", 0, res.QueueOffset, 1, nil)
				require.Equal(t, Found, r.Status, "put %d", i)
				require.Equal(t, []string{body}, bodies(t, r))
				q, err := s.QueryMessage("TopicA", fmt.Sprintf("key-%d", i), 1, 0, math.MaxInt64)
				require.NoError(t, err)
				require.Len(t, q.Messages, 1, "put %d", i)
				q.Release()
			}
		})
	}
}

func TestStore_GetMessage_Statuses(t *testing.T) {
	opts := smallOptions()
	s := openTestStore(t, t.TempDir(), opts)
	for i := range 30 {
		mustPut(t, s, msg("TopicS", 0, fmt.Sprint("m", i), "TagA", ""))
	}
	waitDispatched(t, s)

	check := func(name string, r *GetResult, status GetStatus, next int64, n int) {
		t.Helper()
		defer r.Release()
		require.Equal(t, status, r.Status, name)
		require.Equal(t, next, r.NextBeginOffset, name)
		require.Len(t, r.Messages, n, name)
	}
	check("found", s.GetMessage("g", "TopicS", 0, 5, 4, nil), Found, 9, 4)
	check("no matched message", s.GetMessage("g", "TopicS", 0, 5, 4, NewTagFilter("TagB")), NoMatchedMessage, 30, 0)
	check("overflow one", s.GetMessage("g", "TopicS", 0, 30, 4, nil), OffsetOverflowOne, 30, 0)
	check("overflow badly", s.GetMessage("g", "TopicS", 0, 99, 4, nil), OffsetOverflowBadly, 30, 0)
	check("no matched logic queue", s.GetMessage("g", "TopicNone", 0, 0, 4, nil), NoMatchedLogicQueue, 0, 0)

	_, err := s.cqs.GetOrCreate("TopicEmpty", 0)
	require.NoError(t, err)
	check("no message in queue", s.GetMessage("g", "TopicEmpty", 0, 0, 4, nil), NoMessageInQueue, 0, 0)

	// A queue that starts at queue offset 100: below it is too small.
	s.cl.SetQueueOffset("TopicLate", 1, 100)
	mustPut(t, s, msg("TopicLate", 1, "late", "", ""))
	waitDispatched(t, s)
	check("too small", s.GetMessage("g", "TopicLate", 1, 5, 4, nil), OffsetTooSmall, 100, 0)
	check("found at 100", s.GetMessage("g", "TopicLate", 1, 100, 4, nil), Found, 101, 1)

	// The unit's file went away between the bounds check and the read (a
	// race with expiry): OFFSET_FOUND_NULL, and the next file's start.
	q := s.cqs.Get("TopicS", 0)
	r := getResults.Get().(*GetResult)
	r.MinOffset, r.MaxOffset = q.MinOffset(), q.MaxOffset()
	require.NoError(t, q.Close())
	s.readQueue(r, q, 3, 4, nil)
	check("offset found null", r, OffsetFoundNull, 10, 0)

	// The CommitLog files the queue points into are deleted.
	s2 := openTestStore(t, t.TempDir(), opts)
	for i := range 10 {
		mustPut(t, s2, msg("TopicW", 0, string(make([]byte, 1000)), "", fmt.Sprint(i)))
	}
	for i := range 200 {
		mustPut(t, s2, msg("TopicX", 0, string(make([]byte, 1000)), "", fmt.Sprint(i)))
	}
	waitDispatched(t, s2)
	deleted, err := s2.cl.DeleteFiles(func(f *mappedfile.File) bool { return f.From() == 0 }, 1)
	require.NoError(t, err)
	require.Equal(t, 1, deleted)
	check("message was removing", s2.GetMessage("g", "TopicW", 0, 0, 4, nil), MessageWasRemoving, 10, 0)
	first := int64(0) // the first TopicX message in a file still there
	for ; ; first++ {
		off, err := s2.GetCommitLogOffsetInQueue("TopicX", 0, first)
		require.NoError(t, err)
		if off >= int64(opts.CommitLogFileSize) {
			break
		}
	}
	require.Positive(t, first)
	check("found past the deleted file", s2.GetMessage("g", "TopicX", 0, 0, 4, nil), Found, first+4, 4)
}

func TestStore_TagFilter(t *testing.T) {
	s := openTestStore(t, t.TempDir(), smallOptions())
	tags := []string{"TagA", "TagB", "TagC", "", "TagA"}
	for i, tag := range tags {
		mustPut(t, s, msg("TopicT", 0, fmt.Sprint(i), tag, ""))
	}
	waitDispatched(t, s)
	require.Equal(t, []string{"0", "1", "4"}, bodies(t, s.GetMessage("g", "TopicT", 0, 0, 32, NewTagFilter("TagA", "TagB"))))
	require.Equal(t, []string{"2"}, bodies(t, s.GetMessage("g", "TopicT", 0, 0, 32, NewTagFilter("TagC"))))
	require.Len(t, bodies(t, s.GetMessage("g", "TopicT", 0, 0, 32, NewTagFilter("*"))), 5)
	require.Nil(t, NewTagFilter())
}

func TestStore_ManyTopicsAndQueues_RollFiles(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, smallOptions())
	type qkey struct {
		topic string
		qid   int32
	}
	want := map[qkey][]string{}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 600 {
		topic := fmt.Sprintf("Topic%d", r.IntN(5))
		qid := int32(r.IntN(4))
		body := fmt.Sprintf("%s-%d-%d", topic, qid, i)
		mustPut(t, s, msg(topic, qid, body, "", ""))
		want[qkey{topic, qid}] = append(want[qkey{topic, qid}], body)
	}
	waitDispatched(t, s)
	check := func(s *MessageStore) {
		for key, bs := range want {
			topic, qid := key.topic, key.qid
			require.Equal(t, int64(len(bs)), s.GetMaxOffsetInQueue(topic, qid))
			var got []string
			for off := int64(0); off < int64(len(bs)); {
				res := s.GetMessage("g", topic, qid, off, 7, nil)
				require.Equal(t, Found, res.Status)
				off = res.NextBeginOffset
				got = append(got, bodies(t, res)...)
			}
			require.Equal(t, bs, got, key)
		}
	}
	check(s)
	require.NoError(t, s.Close())
	s2 := openTestStore(t, dir, smallOptions())
	check(s2)
}

func TestStore_QueryMessage(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	opts := smallOptions()
	opts.Now = clock
	dir := t.TempDir()
	s := openTestStore(t, dir, opts)

	var times []int64
	for i := range 100 { // 40 entries per index file: several files
		key := fmt.Sprintf("key%d", i%5)
		res := mustPut(t, s, msg("TopicQ", int32(i%2), fmt.Sprint(i), "", key+" shared"))
		times = append(times, res.StoreTimestamp)
		advance(time.Second)
	}
	mustPut(t, s, msg("OtherTopic", 0, "other", "", "key1"))
	waitDispatched(t, s)
	require.Greater(t, s.index.Files(), 2)

	query := func(s *MessageStore, key string, maxNum int, begin, end int64) []string {
		t.Helper()
		r, err := s.QueryMessage("TopicQ", key, maxNum, begin, end)
		require.NoError(t, err)
		defer r.Release()
		var out []string
		for _, sl := range r.Messages {
			rec, err := message.Parse(sl.Bytes())
			require.NoError(t, err)
			out = append(out, string(rec.Body()))
		}
		return out
	}
	all := query(s, "key1", 64, 0, 1<<62)
	require.Equal(t, []string{"96", "91", "86", "81", "76", "71", "66", "61", "56", "51", "46", "41", "36", "31", "26", "21", "16", "11", "6", "1"}, all, "newest first, across files, not OtherTopic's")
	require.Equal(t, []string{"96", "91", "86"}, query(s, "key1", 3, 0, 1<<62))
	require.Equal(t, []string{"26", "21"}, query(s, "key1", 64, times[20], times[29]))
	require.Len(t, query(s, "shared", 64, 0, 1<<62), 64)
	require.Empty(t, query(s, "nokey", 64, 0, 1<<62))

	require.NoError(t, s.Close())
	s2 := openTestStore(t, dir, opts)
	require.Equal(t, all, query(s2, "key1", 64, 0, 1<<62), "queryable after reopen")
}

func TestStore_OffsetByTime_AndEarliest(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	var mu sync.Mutex
	opts := smallOptions()
	opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := openTestStore(t, t.TempDir(), opts)
	var times []int64
	for i := range 50 {
		res := mustPut(t, s, msg("TopicTime", 0, fmt.Sprint(i), "", ""))
		times = append(times, res.StoreTimestamp)
		mu.Lock()
		now = now.Add(10 * time.Millisecond)
		mu.Unlock()
	}
	waitDispatched(t, s)
	for _, i := range []int{0, 1, 17, 49} {
		require.Equal(t, int64(i), s.GetOffsetInQueueByTime("TopicTime", 0, times[i]))
		require.Equal(t, int64(i), s.GetOffsetInQueueByTime("TopicTime", 0, times[i]-5), "first stored at or after")
	}
	earliest, err := s.GetEarliestMessageTime("TopicTime", 0)
	require.NoError(t, err)
	require.Equal(t, times[0], earliest)
	storeEarliest, err := s.GetStoreEarliestMessageTime()
	require.NoError(t, err)
	require.Equal(t, times[0], storeEarliest)
	off, err := s.GetCommitLogOffsetInQueue("TopicTime", 0, 3)
	require.NoError(t, err)
	rec, sl, err := s.LookMessageByOffset(off)
	require.NoError(t, err)
	require.Equal(t, "3", string(rec.Body()))
	sl.Release()
	_, err = s.GetCommitLogOffsetInQueue("TopicTime", 0, 50)
	require.ErrorIs(t, err, commitlog.ErrNotFound)
	_, err = s.GetEarliestMessageTime("NoSuchTopic", 0)
	require.ErrorIs(t, err, ErrNoQueue)
}

func TestStore_PutRefusals(t *testing.T) {
	opts := smallOptions()
	opts.MaxMessageSize = 1000
	s := openTestStore(t, t.TempDir(), opts)
	_, err := s.PutMessage(msg("bad topic!", 0, "x", "", ""))
	require.ErrorIs(t, err, message.ErrBadTopic)
	_, err = s.PutMessage(msg("", 0, "x", "", ""))
	require.ErrorIs(t, err, message.ErrBadTopic)
	_, err = s.PutMessage(msg("TopicOK", -1, "x", "", ""))
	require.ErrorIs(t, err, ErrBadQueueID)
	_, err = s.PutMessage(msg("TopicOK", 0, string(make([]byte, 1001)), "", ""))
	require.ErrorIs(t, err, commitlog.ErrTooLarge)
	_, err = s.PutMessages([]*message.Message{msg("TopicOK", 0, "fine", "", ""), msg("bad/topic", 0, "x", "", "")})
	require.ErrorIs(t, err, message.ErrBadTopic)
	require.Equal(t, int64(0), s.CommitLog().MaxOffset(), "nothing was written")
	require.NoError(t, s.Close())
	_, err = s.PutMessage(msg("TopicOK", 0, "x", "", ""))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Close(), ErrClosed)
}

func TestStore_LockedByAnother(t *testing.T) {
	dir := t.TempDir()
	openTestStore(t, dir, smallOptions())
	_, err := Open(dir, smallOptions())
	require.ErrorIs(t, err, ErrLocked)
}

// TestStore_ArrivalOrder_ConcurrentPuts: arrivals come once per message,
// per queue in queue-offset order, and match what GetMessage returns;
// each carries its message's properties.
func TestStore_ArrivalOrder_ConcurrentPuts(t *testing.T) {
	s := openTestStore(t, t.TempDir(), smallOptions())
	var mu sync.Mutex
	seen := map[string][]int64{}
	keys := map[string]int{}
	var calls atomic.Int64
	s.AddArrivalListener(func(a Arrival) {
		calls.Add(1)
		key, _ := message.LookupProperty(a.Properties, message.PropertyKeys)
		mu.Lock()
		k := fmt.Sprintf("%s/%d", a.Topic, a.QueueID)
		seen[k] = append(seen[k], a.QueueOffset)
		keys[strings.Clone(key)]++
		mu.Unlock()
	})
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.PutMessage(msg(fmt.Sprintf("T%d", i%3), int32(w%2), "x", "", fmt.Sprintf("k%d-%d", w, i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	waitDispatched(t, s)
	require.Equal(t, int64(writers*each), calls.Load())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, keys, writers*each, "every arrival carries its own message's KEYS")
	for k, offs := range seen {
		for i, off := range offs {
			require.Equal(t, int64(i), off, "queue %s dispatched in order", k)
		}
	}
}

// countingMapper maps with mmap and records the folders of the files it
// mapped.
type countingMapper struct {
	mu   sync.Mutex
	dirs map[string]int
}

func (c *countingMapper) Map(f *os.File, size int) (mappedfile.Region, error) {
	c.mu.Lock()
	c.dirs[filepath.Base(filepath.Dir(f.Name()))]++
	c.mu.Unlock()
	return mappedfile.MmapMapper{}.Map(f, size)
}

// The store's Options reach the CommitLog: every file goes through the
// store's Mapper (the power-loss test counts on it), and the pool.
func TestStore_CommitLogGetsTheStoreOptions(t *testing.T) {
	m := &countingMapper{dirs: map[string]int{}}
	opts := smallOptions()
	opts.Mapper = m
	opts.TransientStorePool = true
	s := openTestStore(t, t.TempDir(), opts)
	_, err := s.PutMessage(msg("T", 0, "b", "", "k"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { // readable once the pool buffer is committed
		g := s.GetMessage("g", "T", 0, 0, 1, nil)
		defer g.Release()
		return g.Status == Found
	}, 5*time.Second, 10*time.Millisecond)
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Positive(t, m.dirs["commitlog"], "CommitLog files mapped by the store's Mapper; got %v", m.dirs)
	require.Positive(t, m.dirs["0"], "ConsumeQueue files too; got %v", m.dirs)
	last := s.CommitLog().Files()[len(s.CommitLog().Files())-1]
	require.True(t, last.HasPoolBuffer(), "TransientStorePool reaches the CommitLog")
}

// When the index refuses entries, the consume queues go on without it:
// the put whose keys it refused is acknowledged (consumable, indexed
// later), the next ones are refused until the index catches up; after a
// reopen every message written is indexed, once.
func TestStore_IndexFailure_QueuesGoOnPutsRefusedThenRecovers(t *testing.T) {
	dir := t.TempDir()
	opts := smallOptions()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	const before, total = 5, 80 // more than an index batch fails
	for i := range before {
		mustPut(t, s, msg("TopicI", 0, fmt.Sprint(i), "", fmt.Sprintf("key%d", i)))
	}
	waitDispatched(t, s)
	at := s.DispatchedOffset()
	require.NoError(t, s.index.Close()) // from here on the index refuses every entry
	// The first put is dispatched to its queue without its keys; the
	// rest are refused while the index is behind.
	mustPut(t, s, msg("TopicI", 0, fmt.Sprint(before), "", fmt.Sprintf("key%d", before)))
	require.Greater(t, s.DispatchedOffset(), at, "the consume queue did not wait for the index")
	for i := before + 1; i < total; i++ {
		_, err := s.PutMessage(msg("TopicI", 0, "refused", "", "refused"))
		require.ErrorIs(t, err, ErrNotWritable)
		require.ErrorIs(t, err, ErrIndexBehind)
		require.ErrorIs(t, err, indexfile.ErrClosed, "the error names the cause")
	}
	require.Error(t, s.Close())
	const written = before + 1

	s = openTestStore(t, dir, opts)
	waitDispatched(t, s)
	var got []string
	for off := int64(0); off < written; {
		r := s.GetMessage("g", "TopicI", 0, off, 32, nil)
		require.Equal(t, Found, r.Status)
		off = r.NextBeginOffset
		got = append(got, bodies(t, r)...)
	}
	require.Len(t, got, written, "each message written once, the refused ones not at all")
	for i := range written {
		require.Equal(t, fmt.Sprint(i), got[i])
		q, err := s.QueryMessage("TopicI", fmt.Sprintf("key%d", i), 10, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Messages, 1, "key%d is indexed once", i)
		q.Release()
	}
}

// keysFilter is a RecordFilter passing TagA records whose KEYS property is
// one of a set.
type keysFilter struct{ keys map[string]bool }

func (f keysFilter) MatchTagsCode(code int64) bool { return code == message.TagsCode("TagA") }

func (f keysFilter) MatchRecord(rec []byte) bool {
	r, err := message.Parse(rec)
	if err != nil {
		return false
	}
	k, _ := message.LookupProperty(r.Properties(), message.PropertyKeys)
	return f.keys[string(k)]
}

func TestStore_RecordFilter(t *testing.T) {
	s := openTestStore(t, t.TempDir(), smallOptions())
	for i, tk := range [][2]string{{"TagA", "k1"}, {"TagA", "k2"}, {"TagB", "k1"}, {"TagA", "k3"}, {"TagA", "k1"}} {
		mustPut(t, s, msg("TopicR", 0, fmt.Sprint(i), tk[0], tk[1]))
	}
	waitDispatched(t, s)
	f := keysFilter{map[string]bool{"k1": true, "k3": true}}
	require.Equal(t, []string{"0", "3", "4"}, bodies(t, s.GetMessage("g", "TopicR", 0, 0, 32, f)))
	r := s.GetMessage("g", "TopicR", 0, 1, 2, keysFilter{map[string]bool{"none": true}})
	require.Equal(t, NoMatchedMessage, r.Status, "records read but none passed")
	require.Equal(t, int64(5), r.NextBeginOffset)
	r.Release()
}
