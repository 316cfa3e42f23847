package indexfile

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFile_Layout_MatchesRocketMQBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "20231114221320000")
	opts := Options{HashSlots: 8, MaxIndexes: 4}
	f, err := CreateFile(path, 0, 0, opts)
	require.NoError(t, err)

	const t0 = 1_700_000_000_000
	key1 := KeyHash("TopicTest", "key1")            // 1655984460 = 0x62b4514c, slot 1655984460 % 8 = 4
	key2 := KeyHash("TopicTest", "key2")            // 1655984459 = 0x62b4514b, slot 3
	require.NoError(t, f.Put(key1, 1000, t0))       // beginTimestamp 0 then: timeDiff 0
	require.NoError(t, f.Put(key1, 2000, t0+5_500)) // 5.5 s after entry 1: timeDiff 5
	require.NoError(t, f.Put(key2, 3000, t0+61_000))
	require.ErrorIs(t, f.Put(key1, 4000, t0+62_000), ErrFull) // entries 1..3 used
	require.True(t, f.IsFull())
	require.NoError(t, f.Flush())
	require.NoError(t, f.Close())

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, got, 40+8*4+4*20) // 152

	want := make([]byte, 152)
	be := binary.BigEndian
	be.PutUint64(want[0:], t0)        // beginTimestamp
	be.PutUint64(want[8:], t0+61_000) // endTimestamp
	be.PutUint64(want[16:], 1000)     // beginPhyOffset
	be.PutUint64(want[24:], 3000)     // endPhyOffset
	be.PutUint32(want[32:], 2)        // hashSlotCount: slots 3 and 4
	be.PutUint32(want[36:], 4)        // indexCount: next entry
	be.PutUint32(want[40+3*4:], 3)    // slot 3 -> entry 3
	be.PutUint32(want[40+4*4:], 2)    // slot 4 -> entry 2
	entry := func(n int, hash uint32, phy uint64, diff, prev uint32) {
		p := 40 + 8*4 + n*20 // entry 0 at 72, unused
		be.PutUint32(want[p:], hash)
		be.PutUint64(want[p+4:], phy)
		be.PutUint32(want[p+12:], diff)
		be.PutUint32(want[p+16:], prev)
	}
	entry(1, 1655984460, 1000, 0, 0)
	entry(2, 1655984460, 2000, 5, 1)
	entry(3, 1655984459, 3000, 61, 0)
	require.Equal(t, hex.Dump(want), hex.Dump(got))

	// The same entry 2 written out by hand, byte for byte.
	require.Equal(t, "62b4514c"+"00000000000007d0"+"00000005"+"00000001", hex.EncodeToString(got[112:132]))
}

func TestFile_Create_StartsFromPreviousEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "20231114221320000")
	f, err := CreateFile(path, 5000, 1_700_000_000_000, Options{HashSlots: 8, MaxIndexes: 4})
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, int64(5000), f.BeginPhyOffset())
	require.Equal(t, int64(5000), f.EndPhyOffset())
	require.Equal(t, int64(1_700_000_000_000), f.BeginTimestamp())
	require.Equal(t, int64(1_700_000_000_000), f.EndTimestamp())
	require.Equal(t, int32(1), f.IndexCount())

	// The first entry's timeDiff counts from the old end; then the begin
	// values become the entry's own, as in RocketMQ.
	require.NoError(t, f.Put(7, 6000, 1_700_000_003_000))
	require.Equal(t, int64(6000), f.BeginPhyOffset())
	require.Equal(t, int64(1_700_000_003_000), f.BeginTimestamp())
	require.Equal(t, uint32(3), binary.BigEndian.Uint32(f.b[f.entries+20+12:]))
}

func TestFile_Create_RefusesExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "20231114221320000")
	require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o644))
	_, err := CreateFile(path, 0, 0, Options{HashSlots: 8, MaxIndexes: 4})
	require.ErrorIs(t, err, os.ErrExist)
	b, _ := os.ReadFile(path)
	require.Equal(t, "keep me", string(b))
}

func TestOpenFile_WrongSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "20231114221320000")
	require.NoError(t, os.WriteFile(path, make([]byte, 100), 0o644))
	_, err := OpenFile(path, Options{HashSlots: 8, MaxIndexes: 4})
	require.ErrorIs(t, err, ErrBadSize)
	require.ErrorContains(t, err, "open it with the options it was written with")
}

// corruptFile writes a file of 4 slots and 8 entries whose header and
// entries are set by fill, and opens it.
func corruptFile(t *testing.T, fill func(b []byte)) *File {
	t.Helper()
	opts := Options{HashSlots: 4, MaxIndexes: 8}
	b := make([]byte, fileSize(4, 8))
	fill(b)
	path := filepath.Join(t.TempDir(), "20231114221320000")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	f, err := OpenFile(path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// putEntry writes entry n of a 4-slot file.
func putEntry(b []byte, n int, hash int32, phy int64, diff, prev int32) {
	p := HeaderSize + 4*SlotSize + n*EntrySize
	binary.BigEndian.PutUint32(b[p:], uint32(hash))
	binary.BigEndian.PutUint64(b[p+4:], uint64(phy))
	binary.BigEndian.PutUint32(b[p+12:], uint32(diff))
	binary.BigEndian.PutUint32(b[p+16:], uint32(prev))
}

func TestFile_Select_CorruptChains(t *testing.T) {
	const hash = 5 // slot 1
	for _, tc := range []struct {
		name string
		fill func(b []byte)
		want []int64
	}{
		{"cycle between two entries", func(b []byte) {
			binary.BigEndian.PutUint32(b[offIndexCount:], 5)
			binary.BigEndian.PutUint32(b[HeaderSize+1*SlotSize:], 2)
			putEntry(b, 2, hash, 200, 0, 3) // points forward: RocketMQ would loop
			putEntry(b, 3, hash, 300, 0, 2)
		}, []int64{200}},
		{"entry points to itself", func(b []byte) {
			binary.BigEndian.PutUint32(b[offIndexCount:], 5)
			binary.BigEndian.PutUint32(b[HeaderSize+1*SlotSize:], 4)
			putEntry(b, 4, hash, 400, 0, 4)
		}, []int64{400}},
		{"indexCount beyond the file", func(b []byte) {
			binary.BigEndian.PutUint32(b[offIndexCount:], 1<<30)
			binary.BigEndian.PutUint32(b[HeaderSize+1*SlotSize:], 1<<29)
		}, nil},
		{"slot at indexCount is not yet published", func(b []byte) {
			binary.BigEndian.PutUint32(b[offIndexCount:], 3)
			binary.BigEndian.PutUint32(b[HeaderSize+1*SlotSize:], 3)
			putEntry(b, 3, hash, 300, 0, 0)
		}, nil},
		{"negative timeDiff ends the chain", func(b []byte) {
			binary.BigEndian.PutUint32(b[offIndexCount:], 4)
			binary.BigEndian.PutUint32(b[HeaderSize+1*SlotSize:], 3)
			putEntry(b, 3, hash, 300, -1, 2)
			putEntry(b, 2, hash, 200, 0, 0)
		}, nil},
		{"negative slot", func(b []byte) {
			binary.BigEndian.PutUint32(b[offIndexCount:], 4)
			binary.BigEndian.PutUint32(b[HeaderSize+1*SlotSize:], 0xFFFFFFFF)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := corruptFile(t, tc.fill)
			got, err := f.Select(nil, hash, 64, 0, 1<<62)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			if err := f.Put(hash, 999, 1); err != nil { // writing on must not panic either
				require.ErrorIs(t, err, ErrFull)
			}
		})
	}
}

func TestFile_Put_NegativeHash(t *testing.T) {
	f, err := CreateFile(filepath.Join(t.TempDir(), "20231114221320000"), 0, 0, Options{HashSlots: 8, MaxIndexes: 4})
	require.NoError(t, err)
	defer f.Close()
	require.ErrorContains(t, f.Put(-1, 1, 1), "negative")
	got, err := f.Select(nil, -1, 10, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestFile_Close_Twice(t *testing.T) {
	f, err := CreateFile(filepath.Join(t.TempDir(), "20231114221320000"), 0, 0, Options{HashSlots: 8, MaxIndexes: 4})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Close(), ErrClosed)
	require.ErrorIs(t, f.Put(1, 1, 1), ErrClosed)
	require.ErrorIs(t, f.Flush(), ErrClosed)
}

func TestOptions_Validate(t *testing.T) {
	err := Options{HashSlots: -1, MaxIndexes: 1, MaxQueryNum: -2}.withDefaults().validate()
	for _, want := range []string{"HashSlots -1", "MaxIndexes 1", "MaxQueryNum -2"} {
		require.ErrorContains(t, err, want)
	}
	err = Options{HashSlots: 400_000_000, MaxIndexes: 40_000_000}.withDefaults().validate()
	require.ErrorContains(t, err, "over 2 GiB")
	require.NoError(t, Options{}.withDefaults().validate())
	require.Equal(t, 420_000_040, fileSize(DefaultHashSlots, DefaultMaxIndexes))
	_, err = Open(t.TempDir(), Options{HashSlots: -1})
	require.True(t, strings.HasPrefix(err.Error(), "indexfile: open "), err.Error())
}
