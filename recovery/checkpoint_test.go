package recovery

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckpoint_LayoutAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint")
	c, err := OpenCheckpoint(path, nil)
	require.NoError(t, err)
	require.Equal(t, CheckpointValues{}, c.Values(), "a new checkpoint reads as zeros")
	c.Update(func(v *CheckpointValues) {
		v.PhysicMsgTimestamp = 1_700_000_000_111
		v.LogicsMsgTimestamp = 1_700_000_000_222
		v.IndexMsgTimestamp = 1_700_000_000_333
		v.MasterFlushedOffset = 44
		v.ConfirmPhyOffset = 55
	})
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Close(), ErrClosed)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, raw, CheckpointSize)
	be := binary.BigEndian
	require.Equal(t, uint64(1_700_000_000_111), be.Uint64(raw[0:]))
	require.Equal(t, uint64(1_700_000_000_222), be.Uint64(raw[8:]))
	require.Equal(t, uint64(1_700_000_000_333), be.Uint64(raw[16:]))
	require.Equal(t, uint64(44), be.Uint64(raw[24:]))
	require.Equal(t, uint64(55), be.Uint64(raw[32:]))
	require.Equal(t, make([]byte, CheckpointSize-40), raw[40:])

	c2, err := OpenCheckpoint(path, nil)
	require.NoError(t, err)
	defer c2.Close()
	v := c2.Values()
	require.Equal(t, int64(1_700_000_000_111), v.PhysicMsgTimestamp)
	require.Equal(t, int64(1_700_000_000_111-3000), v.MinTimestamp())
	require.Equal(t, int64(1_700_000_000_111-3000), v.MinTimestampIndex())
}

// The index mark is stored past RocketMQ's fields with a CRC: it reads
// back as written, and a torn or foreign one reads as none while the
// RocketMQ fields around it stay as they are.
func TestCheckpoint_IndexMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint")
	c, err := OpenCheckpoint(path, nil)
	require.NoError(t, err)
	mark := IndexMark{File: 20261201100000123, IndexCount: 77, EndPhyOffset: 1 << 33, EndTimestamp: 1_700_000_000_999}
	c.Update(func(v *CheckpointValues) {
		v.IndexMsgTimestamp = 1_700_000_000_999
		v.IndexMark = mark
	})
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, make([]byte, indexMarkOffset-40), raw[40:indexMarkOffset], "RocketMQ's area past its fields stays zero")
	require.Equal(t, make([]byte, CheckpointSize-indexMarkOffset-indexMarkSize), raw[indexMarkOffset+indexMarkSize:])

	c, err = OpenCheckpoint(path, nil)
	require.NoError(t, err)
	require.Equal(t, mark, c.Values().IndexMark)
	read, err := ReadCheckpoint(path)
	require.NoError(t, err)
	require.Equal(t, c.Values(), read)
	require.NoError(t, c.Close())

	raw[indexMarkOffset+9] ^= 1 // the count, as if half of it reached the disk
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	c, err = OpenCheckpoint(path, nil)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, IndexMark{}, c.Values().IndexMark, "a mark whose CRC fails is no mark")
	require.Equal(t, int64(1_700_000_000_999), c.Values().IndexMsgTimestamp)
}

func TestCheckpoint_MinTimestamp(t *testing.T) {
	require.Equal(t, int64(0), CheckpointValues{PhysicMsgTimestamp: 100, LogicsMsgTimestamp: 5000}.MinTimestamp())
	require.Equal(t, int64(7000), CheckpointValues{PhysicMsgTimestamp: 20000, LogicsMsgTimestamp: 10000}.MinTimestamp())
	require.Equal(t, int64(500), CheckpointValues{PhysicMsgTimestamp: 20000, LogicsMsgTimestamp: 10000, IndexMsgTimestamp: 500}.MinTimestampIndex())
}

func TestAbort(t *testing.T) {
	a := NewAbort(t.TempDir())
	require.False(t, a.Exists())
	require.NoError(t, a.Create())
	require.True(t, a.Exists())
	require.NoError(t, a.Remove())
	require.False(t, a.Exists())
	require.NoError(t, a.Remove(), "removing twice is fine")
}
