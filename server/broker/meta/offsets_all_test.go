package meta

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOffsets_All_SortedCopies(t *testing.T) {
	o := openOffsets(t, newOffsetsPath(t))
	require.Empty(t, o.All())
	o.Commit("g2", "T", 0, 7)
	o.Commit("g", "U", 3, 1)
	o.Commit("g", "T", 0, 10)
	o.Commit("g", "T", 1, 20)
	all := o.All()
	require.Equal(t, []GroupOffsets{
		{Group: "g", Topic: "T", Offsets: map[int32]int64{0: 10, 1: 20}},
		{Group: "g", Topic: "U", Offsets: map[int32]int64{3: 1}},
		{Group: "g2", Topic: "T", Offsets: map[int32]int64{0: 7}},
	}, all)
	all[0].Offsets[0] = 99 // a copy
	off, _ := o.Query("g", "T", 0)
	require.Equal(t, int64(10), off)
	o.RemoveGroup("g")
	require.Len(t, o.All(), 1)
}
