package vfs

import (
	"errors"
	"fmt"
	"path/filepath"
)

// WriteFile replaces name with data so that a crash at any point leaves
// either the old file or the new one, whole, never a torn one: data goes
// to name+".tmp", which is synced and closed, then renamed over name, and
// the folder is synced (only then is the rename durable). The folder is
// created if needed. On an error the temp file is removed and name is
// untouched.
func WriteFile(fs FS, name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("vfs: write %s: %w", name, err)
	}
	tmp := name + ".tmp"
	if err := writeSynced(fs, tmp, data); err != nil {
		return errors.Join(fmt.Errorf("vfs: write %s: %w", name, err), removeIfThere(fs, tmp))
	}
	if err := fs.Rename(tmp, name); err != nil {
		return errors.Join(fmt.Errorf("vfs: write %s: %w", name, err), removeIfThere(fs, tmp))
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("vfs: write %s: %w", name, err)
	}
	return nil
}

// writeSynced creates name with data, synced and closed.
func writeSynced(fs FS, name string, data []byte) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// removeIfThere removes a left-over temp file; a crashed FS's error is
// not worth reporting on top of the one that brought us here.
func removeIfThere(fs FS, name string) error {
	if err := fs.Remove(name); err != nil && !errors.Is(err, ErrCrashed) && !isNotExist(err) {
		return err
	}
	return nil
}
