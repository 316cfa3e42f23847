// Package vfs is the file seam of the store's and the broker's small
// files (config files, delay offsets): an FS interface, the operating
// system's FS, the one durable way to replace a file (WriteFile), and a
// crash double (CrashFS) that loses what was not synced.
package vfs

import (
	"fmt"
	"os"
)

// FS is what code that writes small files durably needs of a file system.
type FS interface {
	// Create creates or truncates name for writing.
	Create(name string) (File, error)
	// OpenAppend opens name for writing at its end, creating it if it
	// does not exist.
	OpenAppend(name string) (File, error)
	// ReadFile returns the content of name.
	ReadFile(name string) ([]byte, error)
	// Rename renames oldname to newname, replacing newname.
	Rename(oldname, newname string) error
	// Remove removes name.
	Remove(name string) error
	// Link makes newname a hard link to oldname.
	Link(oldname, newname string) error
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// SyncDir makes the changes of names in dir durable.
	SyncDir(dir string) error
}

// File is a file open for writing.
type File interface {
	Write(p []byte) (int, error)
	// Sync makes what was written durable (fsync).
	Sync() error
	Close() error
}

// OS is the operating system's file system.
type OS struct{}

// Create implements FS.
func (OS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenAppend implements FS. Sync of the file is fdatasync: the size an
// append changes is flushed with the data, the modification time is not.
func (OS) OpenAppend(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return appendFile{f}, nil
}

// appendFile is a file open for appending.
type appendFile struct{ *os.File }

// Sync makes what was appended durable (fdatasync).
func (f appendFile) Sync() error { return datasync(f.File) }

// ReadFile implements FS.
func (OS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// Rename implements FS.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// Link implements FS.
func (OS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// MkdirAll implements FS.
func (OS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// SyncDir implements FS.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}
