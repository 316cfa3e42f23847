package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
)

// ErrCrashed is returned by every operation of a CrashFS from its crash on.
var ErrCrashed = errors.New("vfs: crashed")

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// CrashFS is an in-memory FS that forgets, at a crash, what was not made
// durable: a file's bytes count once it is synced, and a change of names
// once its folder is synced. At Reboot, each folder comes back either as
// it was last synced or as it is (the kernel may have committed it), and
// each file whose bytes were not all synced comes back with its synced
// bytes or a random prefix of what was written (the kernel may have
// written some back). It can crash at its n-th operation (CrashAt). It is
// safe for concurrent use.
type CrashFS struct {
	mu      sync.Mutex // guards everything below
	rng     *rand.Rand
	names   map[string]*inode            // path -> file, now
	durable map[string]map[string]*inode // folder -> name -> file, as last synced
	dirs    map[string]bool
	ops     int
	crashAt int // the operation that crashes, counting from 1; 0: none
	crashed bool
}

type inode struct {
	data   []byte // as written
	synced []byte // as last synced
}

// NewCrashFS returns an empty CrashFS; seed picks what survives reboots.
func NewCrashFS(seed uint64) *CrashFS {
	return &CrashFS{
		rng:     rand.New(rand.NewPCG(seed, seed^0x5bd1e995)),
		names:   map[string]*inode{},
		durable: map[string]map[string]*inode{},
		dirs:    map[string]bool{},
	}
}

// Put makes name hold data, durably, as a file written before the test.
func (c *CrashFS) Put(name string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ino := &inode{data: slices.Clone(data), synced: slices.Clone(data)}
	c.names[name] = ino
	c.mkdirLocked(filepath.Dir(name))
	c.syncDirLocked(filepath.Dir(name))
}

// CrashAt makes the n-th operation from now (1: the next) crash: it and
// every later one fail with ErrCrashed and change nothing. 0 disarms.
func (c *CrashFS) CrashAt(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= 0 {
		c.crashAt = 0
		return
	}
	c.crashAt = c.ops + n
}

// Crashed reports whether the crash happened.
func (c *CrashFS) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// Reboot returns the FS as it is found after a power loss now: what was
// durable, plus what the kernel may have written back on its own.
func (c *CrashFS) Reboot() *CrashFS {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := NewCrashFS(c.rng.Uint64())
	r.dirs = cloneSet(c.dirs)
	seen := map[*inode]*inode{} // hard links stay links
	survive := func(ino *inode) *inode {
		if n, ok := seen[ino]; ok {
			return n
		}
		data := ino.synced
		if !bytes.Equal(ino.data, ino.synced) && c.rng.IntN(2) == 0 {
			// Some of what was written since the last sync reached the
			// disk. Appended to synced bytes, those stay; a rewrite may
			// leave any prefix.
			from := 0
			if bytes.HasPrefix(ino.data, ino.synced) {
				from = len(ino.synced)
			}
			data = ino.data[:from+c.rng.IntN(len(ino.data)-from+1)]
		}
		n := &inode{data: slices.Clone(data), synced: slices.Clone(data)}
		seen[ino] = n
		return n
	}
	for dir := range c.dirs {
		entries := c.durable[dir]
		if c.rng.IntN(2) == 0 {
			entries = c.entriesLocked(dir) // the folder's changes were committed
		}
		for name, ino := range entries {
			r.names[filepath.Join(dir, name)] = survive(ino)
		}
		r.syncDirLocked(dir)
	}
	return r
}

func cloneSet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// entriesLocked lists dir's files now.
func (c *CrashFS) entriesLocked(dir string) map[string]*inode {
	out := map[string]*inode{}
	for p, ino := range c.names {
		if filepath.Dir(p) == dir {
			out[filepath.Base(p)] = ino
		}
	}
	return out
}

func (c *CrashFS) syncDirLocked(dir string) { c.durable[dir] = c.entriesLocked(dir) }

func (c *CrashFS) mkdirLocked(dir string) {
	for d := dir; !c.dirs[d]; d = filepath.Dir(d) {
		c.dirs[d] = true // folders are durable at once: a simplification
		if d == filepath.Dir(d) {
			break
		}
	}
}

// opLocked counts an operation and says whether it may go ahead.
func (c *CrashFS) opLocked() error {
	if c.crashed {
		return ErrCrashed
	}
	c.ops++
	if c.crashAt > 0 && c.ops >= c.crashAt {
		c.crashed = true
		return ErrCrashed
	}
	return nil
}

func notExist(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} }

// Create implements FS.
func (c *CrashFS) Create(name string) (File, error) { return c.open("create", name, true) }

// OpenAppend implements FS.
func (c *CrashFS) OpenAppend(name string) (File, error) { return c.open("open", name, false) }

// open opens name for writing, creating it if missing; trunc empties it
// (O_TRUNC), or writes go at its end.
func (c *CrashFS) open(op, name string, trunc bool) (File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.opLocked(); err != nil {
		return nil, err
	}
	if !c.dirs[filepath.Dir(name)] {
		return nil, notExist(op, name)
	}
	ino, ok := c.names[name]
	switch {
	case !ok:
		ino = &inode{}
		c.names[name] = ino
	case trunc:
		ino.data = nil
	}
	return &crashFile{c: c, ino: ino}, nil
}

// ReadFile implements FS.
func (c *CrashFS) ReadFile(name string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return nil, ErrCrashed
	}
	ino, ok := c.names[name]
	if !ok {
		return nil, notExist("open", name)
	}
	return slices.Clone(ino.data), nil
}

// Rename implements FS.
func (c *CrashFS) Rename(oldname, newname string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.opLocked(); err != nil {
		return err
	}
	ino, ok := c.names[oldname]
	if !ok {
		return notExist("rename", oldname)
	}
	delete(c.names, oldname)
	c.names[newname] = ino
	return nil
}

// Remove implements FS.
func (c *CrashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.opLocked(); err != nil {
		return err
	}
	if _, ok := c.names[name]; !ok {
		return notExist("remove", name)
	}
	delete(c.names, name)
	return nil
}

// Link implements FS.
func (c *CrashFS) Link(oldname, newname string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.opLocked(); err != nil {
		return err
	}
	ino, ok := c.names[oldname]
	if !ok {
		return notExist("link", oldname)
	}
	if _, ok := c.names[newname]; ok {
		return &fs.PathError{Op: "link", Path: newname, Err: fs.ErrExist}
	}
	c.names[newname] = ino
	return nil
}

// MkdirAll implements FS.
func (c *CrashFS) MkdirAll(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.opLocked(); err != nil {
		return err
	}
	c.mkdirLocked(filepath.Clean(dir))
	return nil
}

// SyncDir implements FS.
func (c *CrashFS) SyncDir(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.opLocked(); err != nil {
		return err
	}
	c.syncDirLocked(filepath.Clean(dir))
	return nil
}

type crashFile struct {
	c   *CrashFS
	ino *inode
}

func (f *crashFile) Write(p []byte) (int, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.c.opLocked(); err != nil {
		return 0, err
	}
	f.ino.data = append(f.ino.data, p...)
	return len(p), nil
}

func (f *crashFile) Sync() error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.c.opLocked(); err != nil {
		return err
	}
	f.ino.synced = slices.Clone(f.ino.data)
	return nil
}

func (f *crashFile) Close() error { return nil }
