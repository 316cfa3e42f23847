package ha

import (
	"encoding/binary"
	"fmt"
)

// The AutoSwitch HA wire (controller mode: AutoSwitchHAClient and
// AutoSwitchHAConnection), beside the classic one. Big endian. Every
// message starts with a state word (HAConnectionState ordinal).
//
//	slave → master handshake (16 B):  state=1 | isSyncFromLastFile i16 | isAsyncLearner i16 | slaveBrokerId i64
//	slave → master report (12 B):     state=2 | slaveMaxOffset i64
//	master → slave handshake (20 B + body):
//	                                   state=1 | bodySize i32 | masterMaxOffset i64 | lastEpoch i32 | body
//	                                   body: bodySize/12 entries of epoch i32 | startOffset i64
//	master → slave transfer (36 B + body):
//	                                   state=2 | bodySize i32 | startOffset i64 | epoch i32 |
//	                                   epochStartOffset i64 | confirmOffset i64 | CommitLog bytes
const (
	StateReady     = 0
	StateHandshake = 1
	StateTransfer  = 2
	StateSuspend   = 3
	StateShutdown  = 4

	SlaveHandshakeSize    = 4 + 2 + 2 + 8
	SlaveReportSize       = 4 + 8
	MasterHandshakeSize   = 4 + 4 + 8 + 4
	MasterTransferSize    = MasterHandshakeSize + 8 + 8
	epochEntryWireSize    = 4 + 8
	maxHandshakeEpochBody = 1 << 20 // 87 k terms: far more than any log has
)

// SlaveHandshake is what a slave says first.
type SlaveHandshake struct {
	SyncFromLastFile bool
	AsyncLearner     bool
	BrokerID         int64
}

func boolShort(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

// AppendSlaveHandshake appends the 16-byte handshake.
func AppendSlaveHandshake(b []byte, h SlaveHandshake) []byte {
	b = binary.BigEndian.AppendUint32(b, StateHandshake)
	b = binary.BigEndian.AppendUint16(b, boolShort(h.SyncFromLastFile))
	b = binary.BigEndian.AppendUint16(b, boolShort(h.AsyncLearner))
	return binary.BigEndian.AppendUint64(b, uint64(h.BrokerID))
}

// AppendSlaveReport appends the 12-byte transfer report.
func AppendSlaveReport(b []byte, maxOffset int64) []byte {
	b = binary.BigEndian.AppendUint32(b, StateTransfer)
	return binary.BigEndian.AppendUint64(b, uint64(maxOffset))
}

// SlaveMessage is one decoded slave → master message: a handshake (State
// StateHandshake) or a report (StateTransfer, MaxOffset set).
type SlaveMessage struct {
	State     int32
	Handshake SlaveHandshake
	MaxOffset int64
}

// DecodeSlaveMessage decodes the message at the start of b: n is its
// length, 0 when b does not hold it whole yet.
func DecodeSlaveMessage(b []byte) (m SlaveMessage, n int, err error) {
	if len(b) < 4 {
		return m, 0, nil
	}
	m.State = int32(binary.BigEndian.Uint32(b))
	switch m.State {
	case StateHandshake:
		if len(b) < SlaveHandshakeSize {
			return m, 0, nil
		}
		f1, f2 := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:])
		if f1 > 1 || f2 > 1 {
			return m, 0, fmt.Errorf("%w: handshake flags %d %d", ErrBadFrame, f1, f2)
		}
		m.Handshake = SlaveHandshake{SyncFromLastFile: f1 == 1, AsyncLearner: f2 == 1, BrokerID: int64(binary.BigEndian.Uint64(b[8:]))}
		return m, SlaveHandshakeSize, nil
	case StateTransfer:
		if len(b) < SlaveReportSize {
			return m, 0, nil
		}
		m.MaxOffset = int64(binary.BigEndian.Uint64(b[4:]))
		if m.MaxOffset < 0 {
			return m, 0, fmt.Errorf("%w: slave offset %d", ErrBadFrame, m.MaxOffset)
		}
		return m, SlaveReportSize, nil
	}
	return m, 0, fmt.Errorf("%w: slave state %d", ErrBadFrame, m.State)
}

// AppendMasterHandshake appends the master's handshake: its max offset,
// its last epoch and its epoch entries.
func AppendMasterHandshake(b []byte, maxOffset int64, entries []EpochEntry) []byte {
	var last int32 = -1
	if len(entries) > 0 {
		last = entries[len(entries)-1].Epoch
	}
	b = binary.BigEndian.AppendUint32(b, StateHandshake)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)*epochEntryWireSize))
	b = binary.BigEndian.AppendUint64(b, uint64(maxOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(last))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return b
}

// AppendTransferHeader appends a 36-byte transfer header for a body of
// size bytes starting at start, written in the term (epoch,
// epochStart), with the master's confirm offset.
func AppendTransferHeader(b []byte, size int, start int64, epoch int32, epochStart, confirm int64) []byte {
	b = binary.BigEndian.AppendUint32(b, StateTransfer)
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(epochStart))
	return binary.BigEndian.AppendUint64(b, uint64(confirm))
}

// MasterMessage is one decoded master → slave message. Body aliases the
// buffer it was decoded from.
type MasterMessage struct {
	State int32
	// Handshake: the master's max offset, last epoch and entries.
	MaxOffset int64
	LastEpoch int32
	Entries   []EpochEntry
	// Transfer.
	StartOffset int64
	Epoch       int32
	EpochStart  int64
	Confirm     int64
	Body        []byte
}

// DecodeMasterMessage decodes the message at the start of b: n is its
// length, 0 when b does not hold it whole yet.
func DecodeMasterMessage(b []byte) (m MasterMessage, n int, err error) {
	if len(b) < MasterHandshakeSize {
		return m, 0, nil
	}
	m.State = int32(binary.BigEndian.Uint32(b))
	size := int32(binary.BigEndian.Uint32(b[4:]))
	switch m.State {
	case StateHandshake:
		if size < 0 || size%epochEntryWireSize != 0 || size > maxHandshakeEpochBody {
			return m, 0, fmt.Errorf("%w: handshake body %d", ErrBadFrame, size)
		}
		m.MaxOffset = int64(binary.BigEndian.Uint64(b[8:]))
		m.LastEpoch = int32(binary.BigEndian.Uint32(b[16:]))
		end := MasterHandshakeSize + int(size)
		if len(b) < end {
			return m, 0, nil
		}
		for p := MasterHandshakeSize; p < end; p += epochEntryWireSize {
			e := EpochEntry{Epoch: int32(binary.BigEndian.Uint32(b[p:])), StartOffset: int64(binary.BigEndian.Uint64(b[p+4:]))}
			if k := len(m.Entries); e.StartOffset < 0 || (k > 0 && (e.Epoch <= m.Entries[k-1].Epoch || e.StartOffset < m.Entries[k-1].StartOffset)) {
				return m, 0, fmt.Errorf("%w: handshake epoch entries out of order", ErrBadFrame)
			}
			m.Entries = append(m.Entries, e)
		}
		if m.MaxOffset < 0 {
			return m, 0, fmt.Errorf("%w: master offset %d", ErrBadFrame, m.MaxOffset)
		}
		return m, end, nil
	case StateTransfer:
		if len(b) < MasterTransferSize {
			return m, 0, nil
		}
		if size < 0 || size > maxFrameBody {
			return m, 0, fmt.Errorf("%w: transfer body %d", ErrBadFrame, size)
		}
		m.StartOffset = int64(binary.BigEndian.Uint64(b[8:]))
		m.Epoch = int32(binary.BigEndian.Uint32(b[16:]))
		m.EpochStart = int64(binary.BigEndian.Uint64(b[20:]))
		m.Confirm = int64(binary.BigEndian.Uint64(b[28:]))
		if m.StartOffset < 0 || m.EpochStart < 0 || m.EpochStart > m.StartOffset {
			return m, 0, fmt.Errorf("%w: transfer offsets %d in term from %d", ErrBadFrame, m.StartOffset, m.EpochStart)
		}
		end := MasterTransferSize + int(size)
		if len(b) < end {
			return m, 0, nil
		}
		m.Body = b[MasterTransferSize:end:end]
		return m, end, nil
	}
	return m, 0, fmt.Errorf("%w: master state %d", ErrBadFrame, m.State)
}
