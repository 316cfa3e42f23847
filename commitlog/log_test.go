package commitlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
)

const testFileSize = 64 << 10

var (
	testStoreHost = netip.MustParseAddrPort("10.0.0.7:10911")
	testBornHost  = netip.MustParseAddrPort("192.168.1.20:54321")
)

func openTestLog(t *testing.T, dir string, opts Options) *Log {
	t.Helper()
	if opts.FileSize == 0 {
		opts.FileSize = testFileSize
	}
	if opts.StoreHost == (netip.AddrPort{}) {
		opts.StoreHost = testStoreHost
	}
	l, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func newMessage(topic string, queueID int32, body []byte) *message.Message {
	props := string(message.AppendProperty(message.AppendProperty(nil, message.PropertyTags, "TagA"), message.PropertyKeys, "k1 k2"))
	return &message.Message{
		Topic:         topic,
		QueueID:       queueID,
		Flag:          3,
		Body:          body,
		Properties:    props,
		BornTimestamp: 1_700_000_000_000,
		BornHost:      testBornHost,
	}
}

func randomBody(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// checkRecord reads the record an append wrote and compares it with m.
func checkRecord(t *testing.T, l *Log, res AppendResult, m *message.Message) {
	t.Helper()
	r, s, err := l.ReadRecord(res.WroteOffset)
	require.NoError(t, err)
	defer s.Release()
	require.NoError(t, r.CheckCRC())
	require.Equal(t, res.WroteBytes, len(r))
	require.Len(t, s.Bytes(), len(r), "the slice is exactly the record")
	require.Equal(t, m.Topic, string(r.Topic()))
	require.Equal(t, m.QueueID, r.QueueID())
	require.Equal(t, m.Body, r.Body())
	require.Equal(t, m.Properties, string(r.Properties()))
	require.Equal(t, res.QueueOffset, r.QueueOffset())
	require.Equal(t, res.WroteOffset, r.PhysicalOffset())
	require.Equal(t, res.StoreTimestamp, r.StoreTimestamp())
	require.Equal(t, testStoreHost, r.StoreHost())
	require.Equal(t, testBornHost, r.BornHost())
}

func TestLog_AppendRead_AcrossFiles(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{})
	r := rand.New(rand.NewPCG(1, 2))
	type put struct {
		m   *message.Message
		res AppendResult
	}
	var puts []put
	next := map[string]int64{}
	for i := range 400 {
		topic := fmt.Sprintf("Topic%d", i%3)
		m := newMessage(topic, int32(i%4), randomBody(r, 50+r.IntN(3000)))
		res, err := l.Append(m)
		require.NoError(t, err)
		key := fmt.Sprintf("%s/%d", topic, m.QueueID)
		require.Equal(t, next[key], res.QueueOffset, "queue offsets are contiguous per queue")
		next[key]++
		puts = append(puts, put{m, res})
	}
	require.Greater(t, len(l.Files()), 10, "the test crosses many file boundaries")
	for _, p := range puts {
		checkRecord(t, l, p.res, p.m)
	}

	// The iterator returns every record in order, skipping END_OF_FILE.
	it := l.Iterate(0, true)
	defer it.Close()
	i := 0
	for it.Next() {
		require.Less(t, i, len(puts))
		require.Equal(t, puts[i].res.WroteOffset, it.RecordOffset())
		require.Equal(t, puts[i].m.Body, it.Record().Body())
		i++
	}
	require.NoError(t, it.Err())
	require.Equal(t, len(puts), i)
	require.Equal(t, l.MaxOffset(), it.Offset())
}

// A Reader returns the same bytes as Read, across files, for records
// written after it first held a file too, and pins each file it read from
// until released: a file deleted under it stays readable, and only then
// goes.
func TestLog_Reader(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{})
	r := rand.New(rand.NewPCG(3, 4))
	var res []AppendResult
	for range 60 {
		a, err := l.Append(newMessage("TopicR", 0, randomBody(r, 100+r.IntN(4000))))
		require.NoError(t, err)
		res = append(res, a)
	}
	require.Greater(t, len(l.Files()), 2)

	var rd Reader
	rd.Reset(l)
	check := func(a AppendResult) {
		got, err := rd.Read(a.WroteOffset, a.WroteBytes)
		require.NoError(t, err)
		want, err := l.Read(a.WroteOffset, a.WroteBytes)
		require.NoError(t, err)
		require.Equal(t, want.Bytes(), got.Bytes())
		want.Release()
		got.Release() // a part: does nothing
	}
	for _, a := range res {
		check(a)
	}
	later, err := l.Append(newMessage("TopicR", 0, []byte("written after the hold")))
	require.NoError(t, err)
	check(later)
	_, err = rd.Read(l.MaxOffset(), 10)
	require.ErrorIs(t, err, ErrNotFound)

	first := l.Files()[0]
	firstBytes, err := rd.Read(res[0].WroteOffset, res[0].WroteBytes)
	require.NoError(t, err)
	n, err := l.q.DeleteHead(func(*mappedfile.File) bool { return true }, 1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = l.Read(res[0].WroteOffset, res[0].WroteBytes)
	require.ErrorIs(t, err, ErrNotFound, "the head file is deleted")
	rec, err := message.Parse(firstBytes.Bytes())
	require.NoError(t, err, "the Reader's bytes outlive the delete")
	require.NoError(t, rec.CheckCRC())
	_, err = os.Stat(first.Path())
	require.ErrorIs(t, err, os.ErrNotExist)
	rd.Release()
}

func TestLog_EndOfFile(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{FileSize: 8192})
	m := newMessage("TopicEOF", 0, make([]byte, 3000))
	first, err := l.Append(m)
	require.NoError(t, err)
	second, err := l.Append(m)
	require.NoError(t, err)
	require.Equal(t, first.WroteOffset+int64(first.WroteBytes), second.WroteOffset)

	// The third does not fit with 8 bytes to spare: the rest of file 0 is a
	// blank record and the message starts file 1.
	third, err := l.Append(m)
	require.NoError(t, err)
	require.Equal(t, int64(8192), third.WroteOffset)
	require.Equal(t, int64(2), third.QueueOffset)

	left := 8192 - int(second.WroteOffset) - second.WroteBytes
	s, err := l.Read(second.WroteOffset+int64(second.WroteBytes), left)
	require.NoError(t, err)
	size, magic, ok := message.PeekHeader(s.Bytes())
	require.True(t, ok)
	require.Equal(t, int32(left), size)
	require.Equal(t, message.MagicBlank, magic)
	require.Equal(t, make([]byte, left-8), s.Bytes()[8:], "the rest of the file stays zero")
	s.Release()

	var offs []int64
	it := l.Iterate(0, true)
	for it.Next() {
		offs = append(offs, it.RecordOffset())
	}
	it.Close()
	require.NoError(t, it.Err())
	require.Equal(t, []int64{first.WroteOffset, second.WroteOffset, third.WroteOffset}, offs)
}

func TestLog_ExactFitLeavesRoomForBlank(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{FileSize: 8192})
	probe := newMessage("TopicFit", 0, nil)
	overhead, err := message.EncodedSize(probe)
	require.NoError(t, err)
	// A record of exactly 8192-8 bytes fits and leaves just the blank.
	res, err := l.Append(newMessage("TopicFit", 0, make([]byte, 8192-8-overhead)))
	require.NoError(t, err)
	require.Equal(t, int64(0), res.WroteOffset)
	res, err = l.Append(newMessage("TopicFit", 0, []byte("x")))
	require.NoError(t, err)
	require.Equal(t, int64(8192), res.WroteOffset)
	// One byte more than a file can hold is refused.
	_, err = l.Append(newMessage("TopicFit", 0, make([]byte, 8192-8-overhead+1)))
	var se *SizeError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "record", se.What)
}

func TestLog_OversizeRefused(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{FileSize: 8 << 20, MaxMessageSize: 1 << 20})
	before := l.MaxOffset()
	_, err := l.Append(newMessage("TopicBig", 0, make([]byte, 1<<20+1)))
	require.ErrorIs(t, err, ErrTooLarge)
	var se *SizeError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 1<<20+1, se.Size)
	require.Equal(t, 1<<20, se.Limit)
	require.Contains(t, err.Error(), "1048577")
	require.Contains(t, err.Error(), "1048576")
	require.Equal(t, before, l.MaxOffset(), "nothing written")

	_, err = l.AppendBatch([]*message.Message{
		newMessage("TopicBig", 0, []byte("fine")),
		newMessage("TopicBig", 0, make([]byte, 1<<20+1)),
	})
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, before, l.MaxOffset(), "a refused batch writes nothing")
	require.Equal(t, int64(0), l.QueueOffset("TopicBig", 0))

	res, err := l.Append(newMessage("TopicBig", 0, make([]byte, 1<<20)))
	require.NoError(t, err, "the limit itself is allowed")
	require.Equal(t, int64(0), res.QueueOffset)
}

func TestLog_Reopen_OffsetsContinue(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, Options{})
	for i := range 100 {
		_, err := l.Append(newMessage("TopicR", int32(i%2), bytes.Repeat([]byte{byte(i)}, 1000)))
		require.NoError(t, err)
	}
	tx := newMessage("TopicR", 0, []byte("half"))
	tx.SysFlag = message.TxPrepared
	res, err := l.Append(tx)
	require.NoError(t, err)
	require.Equal(t, int64(0), res.QueueOffset, "a prepared message has no queue offset")
	end := l.MaxOffset()
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Close(), ErrClosed)
	_, err = l.Append(newMessage("TopicR", 0, nil))
	require.ErrorIs(t, err, ErrClosed)

	l2 := openTestLog(t, dir, Options{})
	require.Equal(t, end, l2.MaxOffset())
	require.Equal(t, int64(50), l2.QueueOffset("TopicR", 0))
	require.Equal(t, int64(50), l2.QueueOffset("TopicR", 1))
	m := newMessage("TopicR", 1, []byte("after reopen"))
	res, err = l2.Append(m)
	require.NoError(t, err)
	require.Equal(t, end, res.WroteOffset)
	require.Equal(t, int64(50), res.QueueOffset)
	checkRecord(t, l2, res, m)
}

// appendAndClose appends n messages of 500 bytes to a new log in dir and
// closes it; it returns where they went and the path of the log's file.
func appendAndClose(t *testing.T, dir string, n int) ([]AppendResult, string) {
	t.Helper()
	l := openTestLog(t, dir, Options{})
	var results []AppendResult
	for range n {
		res, err := l.Append(newMessage("TopicT", 0, bytes.Repeat([]byte("z"), 500)))
		require.NoError(t, err)
		results = append(results, res)
	}
	require.NoError(t, l.Close())
	return results, filepath.Join(dir, mappedfile.FileName(0))
}

// A record whose last page never reached the disk ends in zeros, within
// its properties, where the body CRC does not reach: recovery cuts the log
// there too (the test above flips a body byte, which the CRC catches).
func TestLog_Reopen_CutsRecordTornInItsProperties(t *testing.T) {
	dir := t.TempDir()
	results, path := appendAndClose(t, dir, 5)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	end := results[3].WroteOffset + int64(results[3].WroteBytes)
	clear(raw[end-5 : end]) // the end of record 3's properties
	require.NoError(t, os.WriteFile(path, raw, 0o644))

	l2 := openTestLog(t, dir, Options{})
	require.Equal(t, results[3].WroteOffset, l2.MaxOffset(), "cut at the torn record")
	require.Equal(t, int64(3), l2.QueueOffset("TopicT", 0))
}

func TestLog_ConcurrentAppends(t *testing.T) {
	for _, lock := range []PutLock{PutLockMutex, PutLockSpin} {
		t.Run(fmt.Sprintf("lock=%d", lock), func(t *testing.T) {
			l := openTestLog(t, t.TempDir(), Options{PutLock: lock})
			const writers, each = 16, 150
			results := make([][]AppendResult, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 9))
					for range each {
						m := newMessage("TopicC", int32(r.IntN(4)), randomBody(r, 10+r.IntN(700)))
						res, err := l.Append(m)
						if err != nil {
							t.Error(err)
							return
						}
						results[w] = append(results[w], res)
					}
				})
			}
			wg.Wait()
			all := slices.Concat(results...)
			require.Len(t, all, writers*each)
			slices.SortFunc(all, func(a, b AppendResult) int { return int(a.WroteOffset - b.WroteOffset) })
			perQueue := map[int32][]int64{}
			for i, res := range all {
				if i > 0 {
					prev := all[i-1]
					end := prev.WroteOffset + int64(prev.WroteBytes)
					require.LessOrEqual(t, end, res.WroteOffset, "records overlap")
					if end != res.WroteOffset {
						require.Equal(t, int64(0), res.WroteOffset%testFileSize, "only a file end leaves a gap")
					}
				}
				r, s, err := l.ReadRecord(res.WroteOffset)
				require.NoError(t, err)
				require.NoError(t, r.CheckCRC())
				perQueue[r.QueueID()] = append(perQueue[r.QueueID()], r.QueueOffset())
				s.Release()
			}
			total := 0
			for q, offs := range perQueue {
				for i, off := range offs {
					require.Equal(t, int64(i), off, "queue %d offsets in physical order are 0..n-1", q)
				}
				total += len(offs)
			}
			require.Equal(t, writers*each, total)
		})
	}
}

func TestLog_AppendBatch(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{FileSize: 8192})
	_, err := l.Append(newMessage("TopicB", 0, make([]byte, 5000)))
	require.NoError(t, err)
	batch := []*message.Message{
		newMessage("TopicB", 0, make([]byte, 1000)),
		newMessage("TopicB", 0, make([]byte, 1000)),
		newMessage("TopicB", 0, make([]byte, 1000)),
	}
	res, err := l.AppendBatch(batch)
	require.NoError(t, err)
	require.Equal(t, int64(8192), res.WroteOffset, "a batch must fit one file")
	require.Equal(t, 3, res.Messages)
	require.Equal(t, int64(1), res.QueueOffset)
	for i, m := range batch {
		require.Equal(t, int64(1+i), m.QueueOffset)
		checkRecord(t, l, AppendResult{WroteOffset: m.PhysicalOffset, WroteBytes: mustSize(t, m),
			QueueOffset: m.QueueOffset, StoreTimestamp: res.StoreTimestamp}, m)
	}
}

func mustSize(t *testing.T, m *message.Message) int {
	n, err := message.EncodedSize(m)
	require.NoError(t, err)
	return n
}

// TestLog_PoolMatchesDirect writes the same messages with and without the
// transient store pool: the files on disk must be the same bytes.
func TestLog_PoolMatchesDirect(t *testing.T) {
	clock := func() time.Time { return time.UnixMilli(1_700_000_123_456) }
	write := func(pool bool) string {
		dir := t.TempDir()
		l := openTestLog(t, dir, Options{FileSize: 16384, TransientStorePool: pool, PoolBuffers: 2, Now: clock})
		r := rand.New(rand.NewPCG(7, 7))
		for i := range 60 {
			_, err := l.Append(newMessage("TopicP", int32(i%3), randomBody(r, r.IntN(2000))))
			require.NoError(t, err)
			if i%7 == 0 {
				l.Commit(0)
			}
		}
		require.NoError(t, l.Close())
		return dir
	}
	direct, pooled := write(false), write(true)
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	require.Equal(t, names(direct), names(pooled))
	require.Greater(t, len(names(direct)), 3)
	for _, name := range names(direct) {
		a, err := os.ReadFile(filepath.Join(direct, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(pooled, name))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "file %s differs", name)
	}
}

func TestLog_PoolReadsAfterCommit(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{TransientStorePool: true, PoolBuffers: 2})
	res, err := l.Append(newMessage("TopicP", 0, []byte("pooled")))
	require.NoError(t, err)
	_, _, err = l.ReadRecord(res.WroteOffset)
	require.ErrorIs(t, err, ErrNotFound, "not readable before commit")
	l.Commit(0)
	_, s, err := l.ReadRecord(res.WroteOffset)
	require.NoError(t, err)
	s.Release()
}

func TestLog_AppendDoesNotAllocate(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{FileSize: 32 << 20})
	m := newMessage("TopicA", 1, make([]byte, 1024))
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := l.Append(m); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestLog_RecordHeaderIsRocketMQs(t *testing.T) {
	l := openTestLog(t, t.TempDir(), Options{})
	res, err := l.Append(newMessage("TopicH", 2, []byte("hi")))
	require.NoError(t, err)
	s, err := l.Read(res.WroteOffset, res.WroteBytes)
	require.NoError(t, err)
	defer s.Release()
	b := s.Bytes()
	require.Equal(t, uint32(res.WroteBytes), binary.BigEndian.Uint32(b[0:]))
	require.Equal(t, uint32(0xDAA320A7), binary.BigEndian.Uint32(b[4:]))
	require.Equal(t, uint32(2), binary.BigEndian.Uint32(b[12:]))
	require.Equal(t, uint64(res.WroteOffset), binary.BigEndian.Uint64(b[28:]))
}

func TestOpen_BadOptions(t *testing.T) {
	_, err := Open(t.TempDir(), Options{FileSize: 100, MaxMessageSize: -1, PutLock: 9})
	require.Error(t, err)
	for _, s := range []string{"FileSize", "MaxMessageSize", "PutLock"} {
		require.Contains(t, err.Error(), s)
	}
}
