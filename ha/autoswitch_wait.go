package ha

import (
	"math"
	"slices"

	"github.com/rocketstore/rocketstore/store"
)

// SetSyncStateSet tells the master its SyncStateSet (broker ids, itself
// included) as the controller last answered, and the set a change in
// flight asks for (nil when none). Until the controller answers a change,
// acks count against the union of both (upstream's #5663: a put
// acknowledged by the old set alone could be lost when the new set
// elects, and the other way round). With allAckInSyncStateSet a put is
// acknowledged once every member other than the master has it.
func (m *AutoSwitchMaster) SetSyncStateSet(self int64, set, pending []int64) {
	members := slices.Concat(set, pending)
	slices.Sort(members)
	members = slices.Compact(members)
	members = slices.DeleteFunc(members, func(id int64) bool { return id == self })
	m.mu.Lock()
	m.members = members
	m.mu.Unlock()
	m.recompute()
}

// recompute sets the offset every member has acknowledged and answers
// the puts it covers. A master alone acknowledges at once.
func (m *AutoSwitchMaster) recompute() {
	m.mu.Lock()
	c := int64(math.MaxInt64)
	for _, id := range m.members {
		a, ok := m.acks[id]
		if !ok {
			a = -1
		}
		c = min(c, a)
	}
	m.mu.Unlock()
	m.confirmed.Store(c)
	if c >= 0 {
		m.group.answer(c)
	}
}

// ConfirmOffset is the CommitLog offset every SyncStateSet member has:
// what consumers may see and what slaves are told.
func (m *AutoSwitchMaster) ConfirmOffset() int64 { return min(m.confirmed.Load(), m.st.MaxPhyOffset()) }

// WaitReplica waits until every SyncStateSet member (and every member of
// a pending change) acknowledged end, up to SlaveTimeout
// (FlushSlaveTimeout). It implements store.ReplicaWaiter.
func (m *AutoSwitchMaster) WaitReplica(end int64) store.PutStatus {
	if m.confirmed.Load() >= end {
		return store.PutOK
	}
	m.wakeAll()
	return m.group.wait(end, &m.confirmed)
}

// WaitReplicaThen is WaitReplica without blocking.
func (m *AutoSwitchMaster) WaitReplicaThen(end int64, then func(store.PutStatus)) (store.PutStatus, bool) {
	if m.confirmed.Load() >= end {
		return store.PutOK, true
	}
	m.wakeAll()
	m.group.waitThen(end, &m.confirmed, then)
	return 0, false
}
