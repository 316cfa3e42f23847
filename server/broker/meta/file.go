package meta

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/rocketstore/rocketstore/internal/vfs"
)

// Errors of this package; match them with errors.Is.
var (
	// ErrCorrupt: a config file and its .bak both fail to read.
	ErrCorrupt = errors.New("meta: corrupt config file")
	// ErrClosed: the Offsets was closed.
	ErrClosed = errors.New("meta: closed")
	// ErrInvalidName: a topic or group name breaks RocketMQ's rules.
	ErrInvalidName = errors.New("meta: invalid name")
	// ErrTooManyQueues: a topic's queue count is over MaxQueueNums.
	ErrTooManyQueues = errors.New("meta: too many queues")
)

// configFile is one JSON config file, RocketMQ's ConfigManager: read at
// open from the file or, when that is missing, empty or unreadable, from
// its .bak; rewritten whole on each persist, the previous version kept as
// the .bak.
type configFile struct {
	path string
	log  *slog.Logger
	fs   vfs.FS // nil: the operating system's

	mu sync.Mutex // serializes writes; guards keepBak
	// keepBak is set when the file on disk failed to read and the .bak
	// was used: the next write must not replace that good .bak with the
	// bad file.
	keepBak bool
}

// load reads the file, or its .bak, with decode. A missing file (and
// .bak) is no error and decode is not called. It fails with ErrCorrupt
// when the file is unreadable and there is no readable .bak.
func (f *configFile) load(decode func([]byte) error) error {
	data, err := f.fsys().ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f.loadBak(decode, nil)
	case err != nil:
		return fmt.Errorf("meta: read %s: %w", f.path, err)
	case len(bytes.TrimSpace(data)) == 0:
		// A Java broker writes in place: a crash can leave the file empty.
		return f.loadBak(decode, fmt.Errorf("%s is empty", f.path))
	}
	if err := decode(data); err != nil {
		return f.loadBak(decode, fmt.Errorf("%s: %w", f.path, err))
	}
	return nil
}

// loadBak reads the .bak after the main file failed with mainErr (nil
// for a missing main file).
func (f *configFile) loadBak(decode func([]byte) error, mainErr error) error {
	bak := f.path + ".bak"
	data, err := f.fsys().ReadFile(bak)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && len(bytes.TrimSpace(data)) == 0:
		if mainErr != nil {
			return fmt.Errorf("meta: %w, and there is no %s to fall back to; "+
				"repair or remove the file to start with an empty config: %w", mainErr, bak, ErrCorrupt)
		}
		return nil
	case err != nil:
		return fmt.Errorf("meta: read %s: %w", bak, err)
	}
	if err := decode(data); err != nil {
		if mainErr == nil {
			mainErr = fmt.Errorf("%s is missing", f.path)
		}
		return fmt.Errorf("meta: %w, and %s: %w: %w", mainErr, bak, err, ErrCorrupt)
	}
	if mainErr != nil {
		f.log.Warn("config file unreadable, loaded its backup", "file", f.path, "backup", bak, "err", mainErr)
		f.mu.Lock()
		f.keepBak = true
		f.mu.Unlock()
	} else {
		f.log.Warn("config file missing, loaded its backup", "file", f.path, "backup", bak)
	}
	return nil
}

// write replaces the file with data durably: the current file becomes
// the .bak (a hard link, or a copy where links fail), durably, and then
// vfs.WriteFile replaces the file (temp file, fsync, rename, folder
// fsync). At every step the file or its .bak holds a complete version.
func (f *configFile) write(data []byte) error {
	return f.save(func() []byte { return data })
}

// save writes what encode returns, calling it under the write lock, so
// that of two saves the later snapshot is always the one left on disk.
func (f *configFile) save(encode func() []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	data := encode()
	fsys := f.fsys()
	dir := filepath.Dir(f.path)
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("meta: create %s: %w", dir, err)
	}
	if !f.keepBak {
		if err := f.backupLocked(fsys); err != nil {
			return err
		}
	}
	if err := vfs.WriteFile(fsys, f.path, data); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	f.keepBak = false
	return nil
}

func (f *configFile) fsys() vfs.FS {
	if f.fs == nil {
		return vfs.OS{}
	}
	return f.fs
}

// backupLocked makes the current file the .bak, durably, if there is a
// current file.
func (f *configFile) backupLocked(fsys vfs.FS) error {
	bak := f.path + ".bak"
	if err := fsys.Remove(bak); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("meta: %w", err)
	}
	err := fsys.Link(f.path, bak)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // the first write, or only a .bak was left: keep it
	case err != nil:
		// No hard links here (some FUSE or network file systems): copy.
		data, rerr := fsys.ReadFile(f.path)
		if rerr != nil {
			return fmt.Errorf("meta: back up %s: %w", f.path, rerr)
		}
		if werr := vfs.WriteFile(fsys, bak, data); werr != nil {
			return fmt.Errorf("meta: back up %s: %w", f.path, werr)
		}
		return nil
	}
	if err := fsys.SyncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}
