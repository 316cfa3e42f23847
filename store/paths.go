package store

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Paths places the parts of a store outside its root folder, as
// RocketMQ's storePathCommitLog does (an operator keeps the CommitLog on
// its own disk). Each empty field means its default under the root; a
// relative path is taken from the working directory, as RocketMQ takes it.
// The lock file, the config folder and the timer files stay under the root.
type Paths struct {
	// CommitLog is the CommitLog folder (storePathCommitLog); "" means
	// {root}/commitlog. One folder: RocketMQ's list of folders separated
	// by commas is refused.
	CommitLog string
	// ConsumeQueue is the folder of the ConsumeQueues; "" means
	// {root}/consumequeue.
	ConsumeQueue string
	// Index is the folder of the index files; "" means {root}/index.
	Index string
	// Checkpoint is the checkpoint file; "" means {root}/checkpoint.
	Checkpoint string
	// Abort is the abort marker file; "" means {root}/abort.
	Abort string
}

// resolved returns p with every empty field set to its default under
// root.
func (p Paths) resolved(root string) Paths {
	def := func(v, name string) string {
		if v == "" {
			return filepath.Join(root, name)
		}
		return v
	}
	return Paths{
		CommitLog:    def(p.CommitLog, "commitlog"),
		ConsumeQueue: def(p.ConsumeQueue, "consumequeue"),
		Index:        def(p.Index, "index"),
		Checkpoint:   def(p.Checkpoint, "checkpoint"),
		Abort:        def(p.Abort, "abort"),
	}
}

// validate reports a CommitLog given as several folders: RocketMQ spreads
// its files over them (MultiPathMappedFileQueue), which this store does
// not, and taking the list for one folder's name would put the data
// somewhere the operator did not mean.
func (p Paths) validate() error {
	if strings.Contains(p.CommitLog, ",") {
		return fmt.Errorf("Paths.CommitLog %q lists several folders; this store keeps its CommitLog in one", p.CommitLog)
	}
	return nil
}

// CommitLogDir is the folder of the store's CommitLog files.
func (s *MessageStore) CommitLogDir() string { return s.paths.CommitLog }
