package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// crashEveryStep runs write on a CrashFS holding name = old, crashing at
// its 1st, 2nd, ... operation until it runs through, and after each crash
// reboots a few times (each reboot picks other survivors) and hands the
// content found to check, with whether write had reported success.
func crashEveryStep(t *testing.T, name string, old []byte, write func(FS) error, check func(got []byte, exists, acked bool)) int {
	t.Helper()
	for k := 1; ; k++ {
		for seed := range uint64(8) {
			c := NewCrashFS(seed*1000 + uint64(k))
			c.Put(name, old)
			c.CrashAt(k)
			err := write(c)
			acked := err == nil
			if !c.Crashed() {
				require.NoError(t, err)
			}
			r := c.Reboot()
			got, rerr := r.ReadFile(name)
			check(got, rerr == nil, acked)
			if !c.Crashed() && seed == 7 {
				return k
			}
		}
	}
}

// TestWriteFile_CrashLeavesOldOrNew: a crash at any step of WriteFile,
// and whatever of the unsynced bytes and names the kernel wrote back,
// leaves the old file or the new one, whole; once WriteFile returned nil
// it is the new one.
func TestWriteFile_CrashLeavesOldOrNew(t *testing.T) {
	name := filepath.Join("/root", "config", "topics.json")
	old, next := []byte(`{"v":"old-old-old"}`), []byte(`{"v":"new-new-new-new"}`)
	steps := crashEveryStep(t, name, old, func(fs FS) error { return WriteFile(fs, name, next) },
		func(got []byte, exists, acked bool) {
			require.True(t, exists, "the file is never missing")
			if acked {
				require.Equal(t, string(next), string(got))
			} else {
				require.Contains(t, []string{string(old), string(next)}, string(got))
			}
		})
	require.Greater(t, steps, 5, "every step was crashed at")
}

// TestCrashFS_CatchesATornWrite: the double is strict enough to fail a
// writer that rewrites the file in place, or renames before syncing.
func TestCrashFS_CatchesATornWrite(t *testing.T) {
	name := filepath.Join("/root", "x.json")
	old, next := []byte("old-old-old"), []byte("new-new-new-new")
	for _, w := range []struct {
		name  string
		write func(FS) error
	}{
		{"in place", func(fs FS) error { return writeSynced(fs, name, next) }},
		{"rename before sync", func(fs FS) error {
			f, err := fs.Create(name + ".tmp")
			if err != nil {
				return err
			}
			if _, err := f.Write(next); err != nil {
				return err
			}
			if err := fs.Rename(name+".tmp", name); err != nil {
				return err
			}
			return errors.Join(fs.SyncDir(filepath.Dir(name)), f.Sync())
		}},
	} {
		torn := false
		crashEveryStep(t, name, old, w.write, func(got []byte, exists, _ bool) {
			if !exists || string(got) != string(old) && string(got) != string(next) {
				torn = true
			}
		})
		require.True(t, torn, "%s: a torn file was never seen", w.name)
	}
}

func TestWriteFile_OS(t *testing.T) {
	name := filepath.Join(t.TempDir(), "sub", "f.json")
	require.NoError(t, WriteFile(OS{}, name, []byte("one")))
	require.NoError(t, WriteFile(OS{}, name, []byte("two")))
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	require.NoFileExists(t, name+".tmp")
	// A folder in the way of the temp file: an error, the file untouched.
	require.NoError(t, os.Mkdir(name+".tmp", 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(name+".tmp", "x"), nil, 0o644))
	require.Error(t, WriteFile(OS{}, name, []byte("three")))
	got, err = os.ReadFile(name)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
}
