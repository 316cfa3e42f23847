package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/internal/vfs"
)

func TestConfigFile_Write_KeepsPreviousAsBak(t *testing.T) {
	log, _ := testLogger()
	path := filepath.Join(t.TempDir(), "config", "x.json")
	f := &configFile{path: path, log: log}
	require.NoError(t, f.write([]byte("v1")))
	require.Equal(t, "v1", readFile(t, path))
	require.NoFileExists(t, path+".bak")
	require.NoError(t, f.write([]byte("v2")))
	require.NoError(t, f.write([]byte("v3")))
	require.Equal(t, "v3", readFile(t, path))
	require.Equal(t, "v2", readFile(t, path+".bak"))
	require.NoFileExists(t, path+".tmp")
}

func TestConfigFile_Load(t *testing.T) {
	decode := func(got *string) func([]byte) error {
		return func(b []byte) error {
			if string(b) == "bad" {
				return os.ErrInvalid
			}
			*got = string(b)
			return nil
		}
	}
	for _, tc := range []struct {
		name      string
		main, bak *string // nil: no such file
		want      string
		wantErr   error
		wantWarn  bool
	}{
		{name: "neither", want: ""},
		{name: "main only", main: ptr("m"), want: "m"},
		{name: "main wins over bak", main: ptr("m"), bak: ptr("b"), want: "m"},
		{name: "missing main", bak: ptr("b"), want: "b", wantWarn: true},
		{name: "empty main", main: ptr(" \n"), bak: ptr("b"), want: "b", wantWarn: true},
		{name: "corrupt main", main: ptr("bad"), bak: ptr("b"), want: "b", wantWarn: true},
		{name: "corrupt main, no bak", main: ptr("bad"), wantErr: ErrCorrupt},
		{name: "corrupt main, empty bak", main: ptr("bad"), bak: ptr(""), wantErr: ErrCorrupt},
		{name: "corrupt main and bak", main: ptr("bad"), bak: ptr("bad"), wantErr: ErrCorrupt},
		{name: "missing main, corrupt bak", bak: ptr("bad"), wantErr: ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.json")
			if tc.main != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tc.main), 0o644))
			}
			if tc.bak != nil {
				require.NoError(t, os.WriteFile(path+".bak", []byte(*tc.bak), 0o644))
			}
			log, logs := testLogger()
			f := &configFile{path: path, log: log}
			var got string
			err := f.load(decode(&got))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantWarn, logs.String() != "", logs.String())
		})
	}
}

// After falling back to the .bak because the file is corrupt, the next
// write must not turn the corrupt file into the .bak.
func TestConfigFile_WriteAfterFallback_KeepsGoodBak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(path, []byte("bad"), 0o644))
	require.NoError(t, os.WriteFile(path+".bak", []byte("good"), 0o644))
	log, _ := testLogger()
	f := &configFile{path: path, log: log}
	require.NoError(t, f.load(func(b []byte) error {
		if string(b) == "bad" {
			return os.ErrInvalid
		}
		return nil
	}))
	require.NoError(t, f.write([]byte("new")))
	require.Equal(t, "new", readFile(t, path))
	require.Equal(t, "good", readFile(t, path+".bak"))
	require.NoError(t, f.write([]byte("newer")))
	require.Equal(t, "new", readFile(t, path+".bak"))
}

func ptr(s string) *string { return &s }

// TestConfigFile_Write_CrashAtEveryStep: a config file written through
// the crash double, crashed at each of its steps and rebooted with
// whatever of its unsynced bytes and names survived, loads as the old
// version or the new one, whole (from the file or its .bak), and as the
// new one once the write returned.
func TestConfigFile_Write_CrashAtEveryStep(t *testing.T) {
	log, _ := testLogger()
	path := filepath.Join("/store", "config", "topics.json")
	steps := 0
	for k := 1; ; k++ {
		done := false
		for seed := range uint64(8) {
			c := vfs.NewCrashFS(uint64(k)*100 + seed)
			c.Put(path, []byte("v1"))
			c.Put(path+".bak", []byte("v0"))
			f := &configFile{path: path, log: log, fs: c}
			c.CrashAt(k)
			err := f.write([]byte("v2"))
			after := &configFile{path: path, log: log, fs: c.Reboot()}
			var got string
			require.NoError(t, after.load(func(b []byte) error {
				if s := string(b); s != "v1" && s != "v2" {
					return fmt.Errorf("torn: %q", s) // fall back to the .bak
				}
				got = string(b)
				return nil
			}), "crash at step %d", k)
			if err == nil {
				require.Equal(t, "v2", got, "crash at step %d after the write returned", k)
			} else {
				require.Contains(t, []string{"v1", "v2"}, got, "crash at step %d", k)
			}
			done = !c.Crashed()
		}
		if done {
			steps = k
			break
		}
	}
	require.Greater(t, steps, 6, "each step of the write was crashed at")
}
