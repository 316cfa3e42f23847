package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/mappedfile"
)

// ErrDiskFull refuses puts while the disk is fuller than
// DiskSpaceWarningLevelRatio; reads go on (RocketMQ answers
// SERVICE_NOT_AVAILABLE with "disk full").
var ErrDiskFull = errors.New("store: disk full")

// deleteFilesBatchMax bounds the CommitLog files one expiry run deletes
// (deleteFileBatchMax).
const deleteFilesBatchMax = 10

// statfsUsage is the used fraction of the filesystem holding dir.
func statfsUsage(dir string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("store: statfs %s: %w", dir, err)
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	return float64(st.Blocks-st.Bfree) / float64(st.Blocks), nil
}

// noSpace refuses puts after the disk had no room for the next CommitLog
// file (ENOSPC), until expiry finds the room (roomForCommitLogFile); it
// reports whether err was that.
func (s *MessageStore) noSpace(err error) bool {
	if !errors.Is(err, unix.ENOSPC) {
		return false
	}
	if !s.flags.has(diskFull) {
		s.flags.set(diskFull, fmt.Errorf("no space left on the disk for the next commit log file; free space or lower fileReservedTime: %w: %w",
			ErrDiskFull, err))
	}
	return true
}

// roomForCommitLogFile reports whether the disk has room for one more
// CommitLog file (and statfs works).
func (s *MessageStore) roomForCommitLogFile() bool {
	var st unix.Statfs_t
	if err := unix.Statfs(s.paths.CommitLog, &st); err != nil {
		return false
	}
	return int64(st.Bavail)*int64(st.Bsize) >= int64(s.cl.FileSize())
}

func parseDeleteWhen(s string) ([]int, error) {
	var hours []int
	for part := range strings.SplitSeq(s, ";") {
		h, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("DeleteWhen %q: %q is not an hour 0-23", s, part)
		}
		hours = append(hours, h)
	}
	return hours, nil
}

// cleanLoop runs expiry every CleanResourceInterval.
func (s *MessageStore) cleanLoop() {
	t := time.NewTicker(s.opts.CleanResourceInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.CleanExpiredFiles(); err != nil {
				s.log.Error("deleting expired files failed", "err", err)
			}
		}
	}
}

// CleanExpiredFiles runs expiry once, as the store does every
// CleanResourceInterval (CleanCommitLogService, CleanConsumeQueueService):
// it checks the disk, deletes CommitLog files older than FileReservedTime
// (at a DeleteWhen hour, or at once when the disk is fuller than
// DiskMaxUsedSpaceRatio; any old file, oldest first, above
// DiskSpaceCleanForciblyRatio), never the last one, then the ConsumeQueue
// and index files wholly below the CommitLog's new start, and corrects the
// queues' min offsets. It returns how many CommitLog files it deleted.
func (s *MessageStore) CleanExpiredFiles() (int, error) {
	usage, err := s.opts.DiskUsage(s.paths.CommitLog)
	if err != nil {
		return 0, err
	}
	percent := usage * 100
	forcibly := percent > float64(s.opts.DiskSpaceCleanForciblyRatio)
	full := percent > float64(s.opts.DiskSpaceWarningLevelRatio)
	if full {
		if !s.flags.has(diskFull) {
			s.flags.set(diskFull, fmt.Errorf("the disk is %.1f%% full, over diskSpaceWarningLevelRatio %d%%; free space or lower fileReservedTime: %w",
				percent, s.opts.DiskSpaceWarningLevelRatio, ErrDiskFull))
		}
	} else if s.flags.has(diskFull) && s.roomForCommitLogFile() {
		s.flags.clear(diskFull)
	}
	now := time.Now()
	if s.opts.Now != nil {
		now = s.opts.Now()
	}
	hours, _ := parseDeleteWhen(s.opts.DeleteWhen) // checked in Open
	timeUp := false
	for _, h := range hours {
		timeUp = timeUp || now.Hour() == h
	}
	spaceFull := percent > float64(s.opts.DiskMaxUsedSpaceRatio)
	if !timeUp && !spaceFull && !forcibly && !full {
		return 0, nil
	}
	// Above DiskSpaceCleanForciblyRatio files go before they expire
	// (cleanImmediately), if cleanFileForciblyEnable.
	cleanAny := (forcibly || full) && !s.opts.KeepUnexpiredFiles
	dispatched := s.DispatchedOffset()
	oldMin := s.cl.MinOffset()
	n, err := s.cl.DeleteFiles(func(f *mappedfile.File) bool {
		if f.From()+int64(f.Size()) > dispatched {
			return false // its records must reach their queues first
		}
		if cleanAny {
			return true
		}
		st, err := os.Stat(f.Path())
		return err == nil && !st.ModTime().Add(s.opts.FileReservedTime).After(now)
	}, deleteFilesBatchMax)
	min := s.cl.MinOffset()
	switch {
	case n > 0 && cleanAny:
		// Messages not yet consumed may be gone: say which.
		s.log.Warn("deleted commit log files before they expired: the disk is fuller than diskSpaceCleanForciblyRatio",
			"files", n, "fromOffset", oldMin, "toOffset", min, "usedPercent", percent,
			"diskSpaceCleanForciblyRatio", s.opts.DiskSpaceCleanForciblyRatio)
	case n > 0:
		s.log.Info("deleted expired commit log files", "files", n, "fromOffset", oldMin, "toOffset", min, "usedPercent", percent)
	}
	if min < 0 {
		return n, err
	}
	_, cqErr := s.cqs.DeleteExpired(min)
	err = errors.Join(err, cqErr)
	if s.index != nil {
		_, idxErr := s.index.DeleteExpired(min)
		err = errors.Join(err, idxErr)
	}
	return n, err
}
