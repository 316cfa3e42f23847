package meta

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
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
	data, err := os.ReadFile(f.path)
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
	data, err := os.ReadFile(bak)
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

// write replaces the file with data durably: data goes to a temp file
// that is fsynced; the current file becomes the .bak (a hard link, or a
// copy where links fail); the temp file is renamed over the file; the
// folder is fsynced after each change of names. At every step the file or
// its .bak holds a complete version.
func (f *configFile) write(data []byte) error {
	return f.save(func() []byte { return data })
}

// save writes what encode returns, calling it under the write lock, so
// that of two saves the later snapshot is always the one left on disk.
func (f *configFile) save(encode func() []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	data := encode()
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("meta: create %s: %w", dir, err)
	}
	tmp := f.path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return err
	}
	if !f.keepBak {
		if err := f.backupLocked(); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("meta: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	f.keepBak = false
	return nil
}

// backupLocked makes the current file the .bak, if there is a current
// file.
func (f *configFile) backupLocked() error {
	bak := f.path + ".bak"
	if _, err := os.Lstat(f.path); errors.Is(err, fs.ErrNotExist) {
		return nil // the first write, or only a .bak is left: keep it
	}
	if err := os.Remove(bak); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("meta: %w", err)
	}
	if err := os.Link(f.path, bak); err != nil {
		// No hard links here (some FUSE or network file systems): copy.
		data, rerr := os.ReadFile(f.path)
		if rerr != nil {
			return fmt.Errorf("meta: back up %s: %w", f.path, rerr)
		}
		if werr := writeSynced(bak, data); werr != nil {
			return werr
		}
	}
	return syncDir(filepath.Dir(f.path))
}

// writeSynced creates name with data and fsyncs it.
func writeSynced(name string, data []byte) error {
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("meta: write %s: %w", name, err)
	}
	return nil
}

// syncDir makes a change of names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("meta: sync folder %s: %w", dir, err)
	}
	return nil
}
