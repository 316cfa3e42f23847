package indexfile

import (
	"errors"
	"runtime/debug"
	"sort"
)

// Mark is the state of the newest index file at one moment: its name and
// the header fields that say how far it had got. FlushMark returns one
// once that state is on disk; after a crash, RollBack returns the files
// to it.
//
// Why a file can be kept at a mark though it was written after it: an
// entry, once written, never changes, so the entries below IndexCount are
// on disk as they were. A hash slot may have been written back with a
// newer value (an entry number at or past IndexCount, whose entry may be
// lost) or not at all since the mark (then it holds the value it had
// then): RollBack finds the first kind and sets them from the entries.
type Mark struct {
	File         string // the file's name, yyyyMMddHHmmssSSS
	IndexCount   int32
	EndPhyOffset int64
	EndTimestamp int64
}

// FlushMark flushes every file with entries not yet on disk and returns
// the state the newest file was in before the flush began (the zero Mark
// when there is no file): that state is on disk when it returns without
// an error. It holds Put up only to read the header; Put never waits for
// its flush. The store records the mark in its checkpoint.
func (s *Service) FlushMark() (Mark, error) {
	s.putMu.Lock()
	if s.closed.Load() {
		s.putMu.Unlock()
		return Mark{}, ErrClosed
	}
	var m Mark
	if f := s.last.Load(); f != nil {
		// Put changes the header only under putMu: these agree.
		m = Mark{File: f.Name(), IndexCount: f.IndexCount(), EndPhyOffset: f.EndPhyOffset(), EndTimestamp: f.EndTimestamp()}
	}
	s.putMu.Unlock()
	if m.File == "" {
		return Mark{}, nil
	}
	if err := s.Flush(); err != nil {
		return Mark{}, err
	}
	return m, nil
}

// DropAfter keeps, after a crash, only the files that indexMsgTimestamp
// (the checkpoint's endTimestamp of the last full file known flushed)
// vouches for, and deletes the others, before dispatch indexes again
// (IndexService.load when the last exit was not clean, for a checkpoint
// with no Mark). RocketMQ deletes the files whose endTimestamp is after
// indexMsgTimestamp; that keeps two kinds a crash leaves untrustworthy:
// a file whose header never reached the disk (indexCount 1, endTimestamp
// 0), and one filled within the millisecond of indexMsgTimestamp, whose
// header writeback may have saved without the entries it counts (a slot
// chain then ends at a lost entry, and the keys behind it are never found
// again, nor indexed again: Put takes them for indexed). So the files
// kept are the oldest ones while each is full and ends at or before
// indexMsgTimestamp, only the first of those ending exactly at it (the
// one whose flush set it; a later one may share its millisecond): files
// fill and are flushed in name order. Dispatch indexes the rest again.
func (s *Service) DropAfter(indexMsgTimestamp int64) error {
	return s.replaceFiles(func(files []*File) (keep, drop []*File, err error) {
		trusted := indexMsgTimestamp > 0
		for _, f := range files {
			end := f.EndTimestamp()
			trusted = trusted && f.IsFull() && end > 0 && end <= indexMsgTimestamp
			if trusted {
				keep = append(keep, f)
				trusted = end < indexMsgTimestamp
			} else {
				drop = append(drop, f)
			}
		}
		return keep, drop, nil
	}, "dropped an index file the checkpoint does not vouch for", "indexMsgTimestamp", indexMsgTimestamp)
}

// RollBack returns the files, after a crash, to the state m that a
// FlushMark made durable: the files named after m.File are deleted, m.File
// is cut back to m's IndexCount and header values (see Mark), and the
// files before it, full and flushed before it, are kept as they are. The
// store then indexes again from m.EndPhyOffset. A mark whose count does
// not fit its file deletes that file too.
func (s *Service) RollBack(m Mark) error {
	return s.replaceFiles(func(files []*File) (keep, drop []*File, err error) {
		for _, f := range files {
			switch name := f.Name(); {
			case name < m.File:
				keep = append(keep, f)
			case name > m.File || m.IndexCount < 1 || int(m.IndexCount) > f.indexes:
				drop = append(drop, f)
			default:
				if err := f.cut(m.IndexCount, m.IndexCount, m.EndPhyOffset, m.EndTimestamp); err != nil {
					return nil, nil, err
				}
				s.log.Info("rolled an index file back to the checkpoint", "file", f.Path(),
					"indexCount", m.IndexCount, "endPhyOffset", m.EndPhyOffset)
				keep = append(keep, f)
			}
		}
		return keep, drop, nil
	}, "dropped an index file written after the checkpoint", "checkpointFile", m.File)
}

// CutAt forgets the entries of messages at CommitLog offset logEnd and
// after: those a crash or a repair took out of the CommitLog. Put would
// otherwise take the messages written there next for indexed already.
// Files left with no entry are deleted. The entries of the files are
// taken to be on disk whole up to their indexCount (after RollBack, or a
// clean shutdown).
func (s *Service) CutAt(logEnd int64) error {
	return s.replaceFiles(func(files []*File) (keep, drop []*File, err error) {
		keep = files
		for len(keep) > 0 {
			f := keep[len(keep)-1]
			if f.EndPhyOffset() < logEnd {
				break
			}
			count := f.IndexCount()
			// Entries are in CommitLog order: the first one at logEnd or
			// after, at least 1.
			n := int32(1 + sort.Search(int(count)-1, func(i int) bool {
				return f.entryPhyOffset(int32(1+i)) >= logEnd
			}))
			if n == 1 {
				drop = append(drop, f)
				keep = keep[:len(keep)-1]
				continue
			}
			end, ts := f.entryPhyOffset(n-1), f.EndTimestamp()
			if begin := f.BeginTimestamp(); begin > 0 {
				// Entries keep seconds: the end of that second, at most.
				ts = min(ts, begin+int64(f.entryTimeDiff(n-1))*1000+999)
			}
			if err := f.cut(n, count, end, ts); err != nil {
				return nil, nil, err
			}
			s.log.Warn("cut an index file at the end of the commit log", "file", f.Path(),
				"logEnd", logEnd, "indexCount", n)
			break
		}
		return keep, drop, nil
	}, "dropped an index file past the end of the commit log", "logEnd", logEnd)
}

// replaceFiles replaces the files by those split keeps and deletes those it
// drops, logging each with why and the value given. It runs before the
// first Put (it stops Puts and Queries meanwhile).
func (s *Service) replaceFiles(split func([]*File) (keep, drop []*File, err error), why, key string, value any) error {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return ErrClosed
	}
	keep, drop, err := split(s.files)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.files = keep
	s.floor = maxEndPhyOffset(keep)
	if len(keep) > 0 {
		s.last.Store(keep[len(keep)-1])
	} else {
		s.last.Store(nil)
	}
	s.mu.Unlock()

	var errs []error
	for _, f := range drop {
		end := f.EndTimestamp() // f is unmapped after Destroy
		if err := f.Destroy(); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log.Warn(why, "file", f.Path(), "endTimestamp", end, key, value)
	}
	return errors.Join(errs...)
}

// cut makes the file hold its first n entries (numbers 1 to n-1) and no
// more, with endPhyOffset and endTimestamp as given. The entries below
// trusted (n ≤ trusted) must be on disk whole; the others, and the hash
// slots, may hold anything a crash left. Each slot ends up holding its
// newest entry below n: a value below n stays (the slot was not written
// since); one from n to trusted is followed down its chain; any other,
// which only entries a crash may have lost could tell, is found again by
// reading the entries below n once, for all such slots together. The
// changes reach the disk with the next flush.
func (f *File) cut(n, trusted int32, endPhyOffset, endTimestamp int64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer f.recoverFault(&err)
	if err := f.allocateFor(f.entries); err != nil { // it writes slots and the header
		return err
	}
	var lost []uint64 // a bit per slot whose entry must be found again
	used := int32(0)  // slots holding an entry, the header's hashSlotCount
	for slot := range f.slots {
		pos := HeaderSize + slot*SlotSize
		v := f.load32(pos)
		if v >= 0 && v < n {
			if v > 0 {
				used++
			}
			continue
		}
		for v >= n && v < trusted {
			prev := f.entryPrev(v)
			if prev < 0 || prev >= v {
				v = -1 // a broken link
				break
			}
			v = prev
		}
		if v < 0 || v >= n {
			if lost == nil {
				lost = make([]uint64, (f.slots+63)/64)
			}
			lost[slot/64] |= 1 << (slot % 64)
			v = 0
		}
		f.store32(pos, v)
		if v > 0 {
			used++
		}
	}
	if lost != nil {
		for i := int32(1); i < n; i++ { // oldest first: the last one seen is the newest
			h := f.entryHash(i)
			if h < 0 {
				continue // Put never writes one
			}
			pos := f.slotPos(h)
			slot := (pos - HeaderSize) / SlotSize
			if lost[slot/64]&(1<<(slot%64)) != 0 {
				if f.load32(pos) == 0 {
					used++
				}
				f.store32(pos, i)
			}
		}
	}
	if n == 1 { // no entry left: the begin values are the end values, as in a new file
		f.store64(offBeginPhyOffset, endPhyOffset)
		f.store64(offBeginTimestamp, endTimestamp)
	}
	f.store64(offEndPhyOffset, endPhyOffset)
	f.store64(offEndTimestamp, endTimestamp)
	f.store32(offHashSlotCount, used)
	f.store32(offIndexCount, n)
	f.flushedCount.Store(-1)
	return nil
}

// entry returns the 20 bytes of entry number i.
func (f *File) entry(i int32) []byte { return f.b[f.entries+int(i)*EntrySize:][:EntrySize] }

func (f *File) entryHash(i int32) int32      { return int32(be.Uint32(f.entry(i)[0:])) }
func (f *File) entryPhyOffset(i int32) int64 { return int64(be.Uint64(f.entry(i)[4:])) }
func (f *File) entryTimeDiff(i int32) int32  { return int32(be.Uint32(f.entry(i)[12:])) }
func (f *File) entryPrev(i int32) int32      { return int32(be.Uint32(f.entry(i)[16:])) }
