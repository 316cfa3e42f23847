package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A store given Paths keeps each part where it is told, none of them
// under the root, and finds them there again: after a clean close and
// after a crash (the abort marker at its own path sends Open into
// recovery).
func TestStore_PathsPlaceEachPart(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	opts := smallOptions()
	opts.Paths = Paths{
		CommitLog:    filepath.Join(other, "cl"),
		ConsumeQueue: filepath.Join(other, "cq"),
		Index:        filepath.Join(other, "idx"),
		Checkpoint:   filepath.Join(other, "meta", "cp"),
		Abort:        filepath.Join(other, "meta", "abort"),
	}
	s, err := Open(root, opts)
	require.NoError(t, err)
	require.Equal(t, opts.Paths.CommitLog, s.CommitLogDir())
	require.FileExists(t, opts.Paths.Abort, "the abort marker is where Paths.Abort says while the store runs")
	for i := range 30 {
		mustPut(t, s, msg("PathsTopic", 0, "body", "", "k"+string(rune('a'+i%26))))
	}
	waitDispatched(t, s)
	require.NoError(t, s.Close())
	require.NoFileExists(t, opts.Paths.Abort)

	for _, p := range []string{opts.Paths.CommitLog, opts.Paths.ConsumeQueue + "/PathsTopic/0", opts.Paths.Index} {
		entries, err := os.ReadDir(p)
		require.NoError(t, err)
		require.NotEmpty(t, entries, "%s holds the part's files", p)
	}
	require.FileExists(t, opts.Paths.Checkpoint)
	for _, name := range []string{"commitlog", "consumequeue", "index", "checkpoint", "abort"} {
		require.NoFileExists(t, filepath.Join(root, name), "nothing of %s under the root", name)
		require.NoDirExists(t, filepath.Join(root, name), "nothing of %s under the root", name)
	}

	// A crash: the marker left at its path makes Open recover, and what
	// was put is read back from the other folders.
	require.NoError(t, os.WriteFile(opts.Paths.Abort, nil, 0o644))
	s, err = Open(root, opts)
	require.NoError(t, err)
	defer s.Close()
	r := s.GetMessage("g", "PathsTopic", 0, 0, 32, nil)
	require.Equal(t, Found, r.Status)
	require.Len(t, bodies(t, r), 30)
	q, err := s.QueryMessage("PathsTopic", "kc", 4, 0, 1<<62)
	require.NoError(t, err)
	require.NotEmpty(t, q.Messages)
	q.Release()
}

// A CommitLog given as RocketMQ's list of folders is refused: the store
// would otherwise make a folder named after the whole list.
func TestStore_PathsRefuseSeveralCommitLogFolders(t *testing.T) {
	opts := smallOptions()
	opts.Paths.CommitLog = "/a/commitlog,/b/commitlog"
	_, err := Open(t.TempDir(), opts)
	require.ErrorContains(t, err, "several folders")
}
