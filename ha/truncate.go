package ha

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/recovery"
	"github.com/rocketstore/rocketstore/store"
)

// TruncateStore cuts a closed store at offset, a record boundary of its
// CommitLog: what a slave in controller mode does with the tail it shares
// with no term of the new master before it follows it. root is the
// store's folder, paths its Paths (as given to store.Open). The store's
// next Open recovers as after a crash and truncates its ConsumeQueues to
// the new end.
//
// It is crash-safe (upstream's #10666: a crash in the middle must not
// leave a tail that later reads as valid). The intent is written first
// ({root}/haTruncateTo, synced); ResumeTruncation, called before every
// Open, finishes a cut a crash interrupted. Then the abort marker and a
// checkpoint that claims nothing at or past the cut as durable; then the
// files wholly past offset go, newest first (each removal leaves a prefix
// of the old log); then the file holding offset has its tail zeroed, the
// next record's size and magic first, synced on their own, so that
// recovery stops at offset even if the rest of the zeroing is lost; then
// the intent file goes. The epoch file is cut after this returns
// (EpochFile.TruncateSuffix): a crash before that makes the next handshake
// find the same point.
func TruncateStore(root string, paths store.Paths, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("ha: truncate at %d", offset)
	}
	intent := filepath.Join(root, truncateIntent)
	if err := vfs.WriteFile(vfs.OS{}, intent, []byte(strconv.FormatInt(offset, 10))); err != nil {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	return finishTruncation(root, paths, offset)
}

// truncateIntent names the file that holds a truncation under way.
const truncateIntent = "haTruncateTo"

// ResumeTruncation finishes a truncation that a crash interrupted, if
// any; call it before opening the store. It reports whether there was one.
func ResumeTruncation(root string, paths store.Paths) (bool, error) {
	b, err := os.ReadFile(filepath.Join(root, truncateIntent))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ha: truncate: %w", err)
	}
	offset, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || offset < 0 {
		return false, fmt.Errorf("ha: truncate: bad intent %q in %s", b, truncateIntent)
	}
	return true, finishTruncation(root, paths, offset)
}

func finishTruncation(root string, paths store.Paths, offset int64) error {
	def := func(v, name string) string {
		if v == "" {
			return filepath.Join(root, name)
		}
		return v
	}
	clDir, cpPath, abortPath := def(paths.CommitLog, "commitlog"), def(paths.Checkpoint, "checkpoint"), def(paths.Abort, "abort")
	files, err := commitLogFiles(clDir)
	if err != nil {
		return err
	}
	if err := recovery.AbortAt(abortPath).Create(); err != nil {
		return err
	}
	if err := lowerCheckpoint(cpPath, files, offset); err != nil {
		return err
	}
	for _, f := range files { // newest first
		if f.from < offset || (f.from == offset && offset == 0) {
			if err := zeroFrom(f.path, offset-f.from); err != nil {
				return err
			}
			break
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ha: truncate: %w", err)
		}
		if err := mappedfile.SyncDir(clDir); err != nil {
			return fmt.Errorf("ha: truncate: %w", err)
		}
	}
	if err := os.Remove(filepath.Join(root, truncateIntent)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	return mappedfile.SyncDir(root)
}

type logFile struct {
	from int64
	path string
}

// commitLogFiles lists the CommitLog files, newest first.
func commitLogFiles(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ha: truncate: %w", err)
	}
	var files []logFile
	for _, e := range ents {
		from, err := mappedfile.ParseFileName(e.Name())
		if err != nil || e.IsDir() {
			continue
		}
		files = append(files, logFile{from, filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(files, func(a, b logFile) int { return cmp.Compare(b.from, a.from) })
	return files, nil
}

// lowerCheckpoint makes the checkpoint claim nothing at or past offset as
// flushed: its timestamps go down to the store time of the first record
// of the file holding offset (records are stored in time order), its
// confirm offset to offset.
func lowerCheckpoint(path string, files []logFile, offset int64) error {
	ts := int64(0)
	for _, f := range files {
		if f.from > offset || (f.from == offset && f.from > 0) {
			continue
		}
		b := make([]byte, 4096)
		fh, err := os.Open(f.path)
		if err != nil {
			return fmt.Errorf("ha: truncate: %w", err)
		}
		n, _ := fh.ReadAt(b, 0)
		fh.Close()
		if r, err := message.Parse(b[:n]); err == nil {
			ts = r.StoreTimestamp()
		}
		break
	}
	cp, err := recovery.OpenCheckpoint(path, nil)
	if err != nil {
		return err
	}
	cp.Update(func(v *recovery.CheckpointValues) {
		v.PhysicMsgTimestamp = min(v.PhysicMsgTimestamp, ts)
		v.LogicsMsgTimestamp = min(v.LogicsMsgTimestamp, ts)
		v.IndexMsgTimestamp = min(v.IndexMsgTimestamp, ts)
		v.ConfirmPhyOffset = min(v.ConfirmPhyOffset, offset)
		v.IndexMark = recovery.IndexMark{}
	})
	return cp.Close()
}

// zeroFrom zeroes a file from pos to its end: the first 8 bytes on their
// own and synced, then the rest, synced.
func zeroFrom(path string, pos int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	size := st.Size()
	if pos >= size {
		return nil
	}
	head := min(size-pos, 8)
	if _, err := f.WriteAt(make([]byte, head), pos); err != nil {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	zero := make([]byte, 1<<20)
	for p := pos + head; p < size; p += int64(len(zero)) {
		n := min(int64(len(zero)), size-p)
		if _, err := f.WriteAt(zero[:n], p); err != nil {
			return fmt.Errorf("ha: truncate: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ha: truncate: %w", err)
	}
	return nil
}
