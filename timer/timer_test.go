package timer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWheel_SlotsHoldTheirTimeAndSurviveAReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timerwheel")
	w, err := OpenWheel(path, 1000, nil)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.EqualValues(t, 38_707_200, st.Size())

	const at = int64(1_700_000_123_000)
	require.True(t, w.Slot(at).Empty())
	w.Put(Slot{TimeMs: at, FirstPos: 52, LastPos: 104, Num: 2})
	require.Equal(t, Slot{TimeMs: at, FirstPos: 52, LastPos: 104, Num: 2}, w.Slot(at+999)) // same slot
	require.True(t, w.Slot(at+1000).Empty())
	// 14 days later the index is the same, the time is not: empty.
	require.True(t, w.Slot(at+w.SpanMs()).Empty())
	require.Equal(t, at, w.Raw(at+w.SpanMs()).TimeMs)
	require.EqualValues(t, 2, w.Pending(at))
	require.NoError(t, w.Flush())
	require.NoError(t, w.Close())

	// RocketMQ's bytes: the slot at index (at/1000) mod 1,209,600 holds at/1000.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	idx := at / 1000 % (2 * SlotsTotal) * SlotSize
	require.EqualValues(t, at/1000, be.Uint64(raw[idx:]))
	require.EqualValues(t, 104, be.Uint64(raw[idx+16:]))

	w, err = OpenWheel(path, 1000, nil)
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, int64(104), w.Slot(at).LastPos)
	w.Clear(at)
	require.True(t, w.Slot(at).Empty())

	require.NoError(t, os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644))
	bad := filepath.Join(t.TempDir(), "timerwheel")
	require.NoError(t, os.WriteFile(bad, make([]byte, 100), 0o644))
	_, err = OpenWheel(bad, 1000, nil)
	require.ErrorIs(t, err, ErrBadWheel)
}

func TestLog_AppendRollsOverWithABlankTailAndRecovers(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(dir, LogOptions{FileSize: 4096})
	require.NoError(t, err)
	_, err = l.Recover(0, nil)
	require.NoError(t, err)
	perFile := (4096 - minBlank) / UnitSize // 78 units, then a blank tail
	var positions []int64
	for i := range 2*perFile + 5 {
		pos, err := l.Append(Unit{PrevPos: int64(i) - 1, Magic: MagicDefault, WriteTimeMs: 1000, DelayMs: int32(i),
			CommitLogOffset: int64(i) * 100, Size: 100, TopicHash: JavaHash("TopicA")})
		require.NoError(t, err)
		positions = append(positions, pos)
	}
	require.Equal(t, int64(4096), positions[perFile]) // the first of the second file
	require.Equal(t, int64(2*4096+4*UnitSize), positions[len(positions)-1])
	blank := 4096 - perFile*UnitSize
	raw, err := os.ReadFile(filepath.Join(dir, "00000000000000000000"))
	require.NoError(t, err)
	require.EqualValues(t, blank, be.Uint32(raw[perFile*UnitSize:]))
	require.Equal(t, BlankMagic, be.Uint32(raw[perFile*UnitSize+12:]))
	u, err := l.Read(positions[7])
	require.NoError(t, err)
	require.Equal(t, Unit{PrevPos: 6, Magic: 1, WriteTimeMs: 1000, DelayMs: 7, CommitLogOffset: 700, Size: 100, TopicHash: JavaHash("TopicA")}, u)
	require.NoError(t, l.Flush())
	require.NoError(t, l.Close())

	// A torn last unit (its size never written) is cut at a reopen.
	f, err := os.OpenFile(filepath.Join(dir, "00000000000000008192"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0, 0, 0, 0}, 4*UnitSize)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	l, err = OpenLog(dir, LogOptions{FileSize: 4096})
	require.NoError(t, err)
	defer l.Close()
	n := 0
	end, err := l.Recover(0, func(pos int64, u Unit) {
		require.Equal(t, positions[n], pos)
		n++
	})
	require.NoError(t, err)
	require.Equal(t, len(positions)-1, n)
	require.Equal(t, positions[len(positions)-1], end)
	pos, err := l.Append(Unit{Magic: MagicRoll, PrevPos: -1})
	require.NoError(t, err)
	require.Equal(t, end, pos)
}

func TestCheckpoint_RoundTripAndRocketMQOffsets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "timercheck")
	c, v, err := OpenCheckpoint(path, nil)
	require.NoError(t, err)
	require.Equal(t, CheckpointValues{}, v)
	want := CheckpointValues{LastReadTimeMs: 1, LastTimerLogFlushPos: 2, LastTimerQueueOffset: 3, MasterTimerQueueOffset: 4,
		StateVersion: 5, Timestamp: 6, Counter: 7, DeliverFromOffset: 8, DeliverFromKnown: true}
	require.NoError(t, c.Flush(want))
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, raw, 4096)
	for i, off := range []int{0, 8, 16, 24, 32, 40, 48} {
		require.EqualValues(t, i+1, be.Uint64(raw[off:]), "field @%d", off)
	}
	_, v, err = OpenCheckpoint(path, nil)
	require.NoError(t, err)
	require.Equal(t, want, v)
	// A RocketMQ 4.x-era file of 32 bytes reads with zeros after it.
	require.Equal(t, CheckpointValues{LastReadTimeMs: 1, LastTimerLogFlushPos: 2, LastTimerQueueOffset: 3, MasterTimerQueueOffset: 4},
		DecodeCheckpoint(raw[:32]))
}

func TestJavaHash_MatchesStringHashCode(t *testing.T) {
	// Java's "...".hashCode(), over UTF-16 code units (an emoji is two).
	require.Equal(t, int32(0), JavaHash(""))
	require.Equal(t, int32(2603186), JavaHash("Test"))
	require.Equal(t, int32(-1902610879), JavaHash("TopicTest"))
	require.Equal(t, int32(1772899), JavaHash("😀"))
}

func FuzzDecodeUnit(f *testing.F) {
	b := make([]byte, UnitSize)
	Unit{PrevPos: -1, Magic: MagicDefault | MagicRoll, WriteTimeMs: 1700000000000, DelayMs: 5000, CommitLogOffset: 1 << 40, Size: 300, TopicHash: -5}.Encode(b)
	f.Add(b)
	blank := make([]byte, minBlank)
	be.PutUint32(blank, 100)
	be.PutUint32(blank[12:], BlankMagic)
	f.Add(blank)
	f.Add([]byte{0, 0, 0, 52})
	f.Fuzz(func(t *testing.T, p []byte) {
		u, err := DecodeUnit(p)
		if err != nil {
			return
		}
		out := make([]byte, UnitSize)
		u.Encode(out)
		back, err := DecodeUnit(out)
		if err != nil || back != u {
			t.Fatalf("round trip: %+v -> %+v, %v", u, back, err)
		}
	})
}

func FuzzDecodeCheckpoint(f *testing.F) {
	b := make([]byte, CheckpointLen)
	CheckpointValues{LastReadTimeMs: 1700000000000, DeliverFromOffset: 99, DeliverFromKnown: true}.Encode(b)
	f.Add(b)
	f.Add(b[:32])
	f.Fuzz(func(t *testing.T, p []byte) {
		v := DecodeCheckpoint(p)
		if len(p) < CheckpointLen {
			return
		}
		out := make([]byte, CheckpointLen)
		v.Encode(out)
		if DecodeCheckpoint(out) != v {
			t.Fatalf("round trip differs: %+v", v)
		}
	})
}
