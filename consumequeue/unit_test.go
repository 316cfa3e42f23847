package consumequeue

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnit_EncodeDecode_BigEndianLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Unit
		want [UnitSize]byte
	}{
		{"zero", Unit{}, [UnitSize]byte{}},
		{"fields", Unit{Offset: 0x0102030405060708, Size: 0x090A0B0C, TagsCode: 0x0D0E0F1011121314},
			[UnitSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		{"negative tags code", Unit{Offset: 1, Size: 2, TagsCode: -1},
			[UnitSize]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"placeholder", placeholder,
			[UnitSize]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b [UnitSize]byte
			encodeUnit(b[:], tc.u)
			require.Equal(t, tc.want, b)
			require.Equal(t, tc.u, decodeUnit(b[:]))
		})
	}
}

func TestUnit_Valid(t *testing.T) {
	for _, tc := range []struct {
		name        string
		u           Unit
		valid, fill bool
	}{
		{"all zero ends a scan", Unit{}, false, false},
		{"message at offset 0", Unit{Offset: 0, Size: 1}, true, false},
		{"negative offset", Unit{Offset: -1, Size: 10}, false, false},
		{"zero size", Unit{Offset: 10, Size: 0}, false, false},
		{"negative size", Unit{Offset: 10, Size: -5}, false, false},
		{"end overflows", Unit{Offset: math.MaxInt64 - 3, Size: 10}, false, false},
		{"placeholder", placeholder, true, true},
		{"placeholder-sized with tags", Unit{Size: placeholderSize, TagsCode: 1}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.valid, tc.u.valid())
			require.Equal(t, tc.fill, tc.u.isPlaceholder())
		})
	}
}

// units encodes us back to back.
func units(us ...Unit) []byte {
	b := make([]byte, len(us)*UnitSize)
	for i, u := range us {
		encodeUnit(b[i*UnitSize:], u)
	}
	return b
}

func TestScanUnits(t *testing.T) {
	a, b, c := Unit{100, 10, 1}, Unit{110, 10, 2}, Unit{120, 10, 3}
	for _, tc := range []struct {
		name    string
		in      []byte
		st      scanState
		want    int
		wantEnd int64
	}{
		{"empty", nil, scanState{}, 0, 0},
		{"three units", units(a, b, c), scanState{}, 3, 130},
		{"zero unit ends", units(a, Unit{}, c), scanState{}, 1, 110},
		{"partial trailing unit ignored", units(a, b, c)[:2*UnitSize+7], scanState{}, 2, 120},
		{"placeholders lead", units(placeholder, placeholder, a), scanState{}, 3, 110},
		{"placeholder after a unit ends", units(a, placeholder, b), scanState{}, 1, 110},
		{"offset going back ends (torn)", units(a, c, b), scanState{}, 2, 130},
		{"overlap with previous ends", units(a, Unit{105, 10, 0}), scanState{}, 1, 110},
		{"continues previous file", units(b, c), scanState{real: true, end: 110}, 2, 130},
		{"stops on previous file's end", units(a), scanState{real: true, end: 110}, 0, 110},
		{"negative size", units(a, Unit{110, -1, 0}), scanState{}, 1, 110},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			require.Equal(t, tc.want, scanUnits(tc.in, &st))
			require.Equal(t, tc.wantEnd, st.end)
		})
	}
}

// FuzzScanUnits checks the recovery scan on arbitrary bytes: what it accepts
// is valid, in order and re-encodes to the same bytes, and the unit it
// stopped at would not be accepted.
func FuzzScanUnits(f *testing.F) {
	f.Add(units(Unit{100, 10, 1}, Unit{110, 10, 2}), false, int64(0))
	f.Add(units(placeholder, Unit{100, 10, 1}, Unit{50, 10, 2}), false, int64(0))
	f.Add(units(Unit{100, 10, 1}, Unit{}, Unit{120, 10, 2}), true, int64(90))
	f.Fuzz(func(t *testing.T, b []byte, real bool, end int64) {
		st := scanState{real: real, end: end}
		n := scanUnits(b, &st)
		require.LessOrEqual(t, n*UnitSize, len(b))
		want := scanState{real: real, end: end}
		for i := range n {
			raw := b[i*UnitSize : (i+1)*UnitSize]
			u := decodeUnit(raw)
			var again [UnitSize]byte
			encodeUnit(again[:], u)
			require.Equal(t, raw, again[:])
			require.True(t, u.valid())
			if u.isPlaceholder() {
				require.False(t, want.real, "placeholder after a unit")
				continue
			}
			if want.real {
				require.GreaterOrEqual(t, u.Offset, want.end)
			}
			want = scanState{real: true, end: u.end()}
		}
		require.Equal(t, want, st)
		if (n+1)*UnitSize <= len(b) {
			again := st
			require.Zero(t, scanUnits(b[n*UnitSize:(n+1)*UnitSize], &again))
		}
	})
}
