package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/server/protocol"
)

// fsm is the raft.FSM around State: Apply decodes and applies a command,
// snapshots are the state as JSON. Readers take the read lock.
type fsm struct {
	mu sync.RWMutex
	st *State
	// applied counts applied commands (for tests and metrics).
	applied uint64
}

func newFSM() *fsm { return &fsm{st: NewState()} }

// Apply implements raft.FSM. It returns a Result.
func (f *fsm) Apply(l *raft.Log) any {
	c, err := DecodeCommand(l.Data)
	if err != nil {
		return Result{Code: protocol.ControllerInvalidRequest, Remark: err.Error()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied++
	return f.st.Apply(c)
}

// Snapshot implements raft.FSM: the state encoded at once, written later.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(f.st)
	if err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	return snapshot(b), nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	st := NewState()
	if err := json.NewDecoder(r).Decode(st); err != nil {
		return fmt.Errorf("controller: restore: %w", err)
	}
	if st.Groups == nil {
		st.Groups = map[string]*Group{}
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

// group returns a copy of a group, or nil.
func (f *fsm) group(name string) *Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.Group(name)
}

// groups returns copies of all groups.
func (f *fsm) groups() []*Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*Group, 0, len(f.st.Groups))
	for _, g := range f.st.Groups {
		out = append(out, g.clone())
	}
	return out
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
