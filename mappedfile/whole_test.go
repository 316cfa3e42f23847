package mappedfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// CreateWhole makes the file at its full size under a temporary name and
// renames it: no temporary file is left, an existing file is refused and
// untouched, and what Sync flushed through Mapping is there after reopen.
func TestFile_CreateWholeSyncReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "20261201100000000")
	f, err := CreateWhole(path, 3*pageSize, FileOptions{})
	require.NoError(t, err)
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1, "no %s file is left", CreatingSuffix)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, int64(3*pageSize), st.Size())

	copy(f.Mapping()[pageSize+1:], "slot")
	require.NoError(t, f.Sync())
	_, err = CreateWhole(path, pageSize, FileOptions{})
	require.ErrorIs(t, err, os.ErrExist)
	require.NoFileExists(t, path+CreatingSuffix)
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.Sync(), ErrClosed)

	g, err := Open(path, 0, 3*pageSize, FileOptions{})
	require.NoError(t, err)
	require.Equal(t, "slot", string(g.Mapping()[pageSize+1:pageSize+5]))
	require.NoError(t, g.Destroy())
	require.NoFileExists(t, path)
}

// A reference taken with Hold keeps the mapping after Close; Hold fails
// once the file is closed, and the last Release unmaps it.
func TestFile_HoldRelease(t *testing.T) {
	f := newTestFile(t, pageSize, nil)
	require.True(t, f.Available())
	require.True(t, f.Hold())
	require.NoError(t, f.Close())
	require.False(t, f.Available())
	require.False(t, f.Hold(), "a closed file gives no new reference")
	f.Mapping()[0] = 1 // still mapped: the holder's reference
	require.NoError(t, f.Release())
	require.Equal(t, int64(0), f.refs.Load())
}
