package ha

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rocketstore/rocketstore/internal/vfs"
)

// EpochEntry is one master term of a CommitLog in controller mode: the
// records from StartOffset up to EndOffset were written by the master of
// Epoch (upstream's EpochEntry). The last entry's EndOffset is the log's
// end, or math.MaxInt64 when not known.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
	EndOffset   int64
}

// EpochFile is the epoch file of a broker in controller mode
// (storePathEpochFile, upstream's EpochFileCache over a CheckpointFile):
// text, line 1 the entry count, line 2 the CRC32 of the entry lines (as
// Java's, masked to 31 bits; 0 skips the check), then one
// "epoch-startOffset" line per entry. Each write first copies the
// previous file to path+".bak" (synced), then replaces the file
// atomically (temp, fsync, rename); a file missing, empty or corrupt is
// read from the .bak.
type EpochFile struct {
	path    string
	mu      sync.Mutex
	entries []EpochEntry
}

// OpenEpochFile reads the epoch file at path (or its .bak); no file is no
// entries.
func OpenEpochFile(path string) (*EpochFile, error) {
	f := &EpochFile{path: path}
	es, err := readEpochFile(path)
	if err != nil || len(es) == 0 {
		var berr error
		es, berr = readEpochFile(path + ".bak")
		if berr != nil {
			return nil, errors.Join(err, berr)
		}
	}
	f.entries = es
	f.fixEnds()
	return f, nil
}

func readEpochFile(path string) ([]EpochEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseEpochFile(b)
}

// ParseEpochFile reads an epoch file's text.
func ParseEpochFile(b []byte) ([]EpochEntry, error) {
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("ha: epoch file: no header")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("ha: epoch file: bad entry count %q", lines[0])
	}
	want, err := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("ha: epoch file: bad crc %q", lines[1])
	}
	var body strings.Builder
	var out []EpochEntry
	for _, l := range lines[2:] {
		if l == "" {
			continue
		}
		body.WriteString(l + "\n")
		e, s, ok := strings.Cut(l, "-")
		if !ok {
			continue
		}
		ep, err1 := strconv.ParseInt(e, 10, 32)
		st, err2 := strconv.ParseInt(s, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("ha: epoch file: bad entry %q", l)
		}
		out = append(out, EpochEntry{Epoch: int32(ep), StartOffset: st})
	}
	if len(out) != n {
		return nil, fmt.Errorf("ha: epoch file: %d entries, header says %d", len(out), n)
	}
	if want != 0 && int64(javaCRC32([]byte(body.String()))) != want {
		return nil, fmt.Errorf("ha: epoch file: crc mismatch")
	}
	for i := 1; i < len(out); i++ {
		if out[i].Epoch <= out[i-1].Epoch || out[i].StartOffset < out[i-1].StartOffset {
			return nil, fmt.Errorf("ha: epoch file: entries out of order at %d", i)
		}
	}
	return out, nil
}

// javaCRC32 is UtilAll.crc32: CRC-32 masked to 31 bits.
func javaCRC32(b []byte) int32 { return int32(crc32.ChecksumIEEE(b) & 0x7FFFFFFF) }

// FormatEpochFile writes entries as the epoch file's text.
func FormatEpochFile(es []EpochEntry) []byte {
	var body strings.Builder
	for _, e := range es {
		body.WriteString(strconv.FormatInt(int64(e.Epoch), 10) + "-" + strconv.FormatInt(e.StartOffset, 10) + "\n")
	}
	return []byte(strconv.Itoa(len(es)) + "\n" + strconv.Itoa(int(javaCRC32([]byte(body.String())))) + "\n" + body.String())
}

// fixEnds sets each entry's end to the next one's start, the last to
// MaxInt64.
func (f *EpochFile) fixEnds() {
	for i := range f.entries {
		if i+1 < len(f.entries) {
			f.entries[i].EndOffset = f.entries[i+1].StartOffset
		} else {
			f.entries[i].EndOffset = math.MaxInt64
		}
	}
}

func (f *EpochFile) flush() error {
	if prev, err := os.ReadFile(f.path); err == nil && len(prev) > 0 {
		if err := vfs.WriteFile(vfs.OS{}, f.path+".bak", prev); err != nil {
			return err
		}
	}
	return vfs.WriteFile(vfs.OS{}, f.path, FormatEpochFile(f.entries))
}

// Entries returns a copy of the entries, oldest first.
func (f *EpochFile) Entries() []EpochEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.entries)
}

// Last returns the newest entry; ok is false when there is none.
func (f *EpochFile) Last() (EpochEntry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.entries) == 0 {
		return EpochEntry{}, false
	}
	return f.entries[len(f.entries)-1], true
}

// Append adds a term starting at start; its epoch and start must be above
// the last entry's (an equal start replaces nothing and fails, as
// upstream's appendEntry).
func (f *EpochFile) Append(epoch int32, start int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.entries); n > 0 {
		last := f.entries[n-1]
		if epoch <= last.Epoch || start < last.StartOffset {
			return fmt.Errorf("ha: epoch %d at %d is not after epoch %d at %d", epoch, start, last.Epoch, last.StartOffset)
		}
		if start == last.StartOffset {
			// The last term wrote nothing: the new one takes its place
			// (a term that never wrote is not a term anyone shares).
			f.entries = f.entries[:n-1]
		}
	}
	f.entries = append(f.entries, EpochEntry{Epoch: epoch, StartOffset: start})
	f.fixEnds()
	return f.flush()
}

// TruncateSuffix removes the terms starting at or after offset (the log
// is cut there).
func (f *EpochFile) TruncateSuffix(offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = slices.DeleteFunc(f.entries, func(e EpochEntry) bool { return e.StartOffset >= offset })
	f.fixEnds()
	return f.flush()
}

// TruncatePrefix removes the terms that end at or before offset (the
// log's first files expired).
func (f *EpochFile) TruncatePrefix(offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = slices.DeleteFunc(f.entries, func(e EpochEntry) bool { return e.EndOffset <= offset })
	return f.flush()
}

// ConsistentPoint is where a slave's log (local, its last entry ending at
// localEnd) and the master's (remote, ending at remoteEnd) stop agreeing
// (upstream's findConsistentPoint): walking the local terms from the
// newest, the first one the master has with the same start gives the
// smaller of the two ends of that term. -1: they share no term.
func ConsistentPoint(local []EpochEntry, localEnd int64, remote []EpochEntry, remoteEnd int64) int64 {
	end := func(es []EpochEntry, i int, last int64) int64 {
		if i+1 < len(es) {
			return es[i+1].StartOffset
		}
		return last
	}
	for i := len(local) - 1; i >= 0; i-- {
		j := slices.IndexFunc(remote, func(e EpochEntry) bool { return e.Epoch == local[i].Epoch })
		if j >= 0 && remote[j].StartOffset == local[i].StartOffset {
			return min(end(local, i, localEnd), end(remote, j, remoteEnd))
		}
	}
	return -1
}
