package ha

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEpochFileRoundTripAndBak(t *testing.T) {
	p := filepath.Join(t.TempDir(), "epochFileCheckpoint")
	f, err := OpenEpochFile(p)
	require.NoError(t, err)
	require.Empty(t, f.Entries())
	require.NoError(t, f.Append(1, 0))
	require.NoError(t, f.Append(2, 100))
	require.Error(t, f.Append(2, 200), "epoch not above the last")
	require.Error(t, f.Append(3, 50), "start before the last")
	require.NoError(t, f.Append(3, 300))
	want := []EpochEntry{{1, 0, 100}, {2, 100, 300}, {3, 300, math.MaxInt64}}
	require.Equal(t, want, f.Entries())
	text, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Regexp(t, `^3\n\d+\n1-0\n2-100\n3-300\n$`, string(text))

	g, err := OpenEpochFile(p)
	require.NoError(t, err)
	require.Equal(t, want, g.Entries())

	// A torn or corrupt main file is read from the .bak (the state
	// before the last write).
	require.NoError(t, os.WriteFile(p, []byte("3\n12345\n1-0\n2-100\n3-300\n"), 0o644))
	g, err = OpenEpochFile(p)
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{1, 0, 100}, {2, 100, math.MaxInt64}}, g.Entries())
	require.NoError(t, os.Remove(p))
	g, err = OpenEpochFile(p)
	require.NoError(t, err)
	require.Len(t, g.Entries(), 2)
	// CRC 0 disables the check, as upstream.
	require.NoError(t, os.WriteFile(p, []byte("1\n0\n7-70\n"), 0o644))
	g, err = OpenEpochFile(p)
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{7, 70, math.MaxInt64}}, g.Entries())
}

func TestEpochFileTruncate(t *testing.T) {
	f, err := OpenEpochFile(filepath.Join(t.TempDir(), "e"))
	require.NoError(t, err)
	for i, s := range []int64{0, 100, 200, 300} {
		require.NoError(t, f.Append(int32(i+1), s))
	}
	require.NoError(t, f.TruncateSuffix(200))
	require.Equal(t, []EpochEntry{{1, 0, 100}, {2, 100, math.MaxInt64}}, f.Entries())
	require.NoError(t, f.TruncatePrefix(100))
	require.Equal(t, []EpochEntry{{2, 100, math.MaxInt64}}, f.Entries())
}

// Upstream #9689: a new epoch at the same offset (a re-election that
// changed no master, nothing written in between) must not fail and leave
// the new epoch out of the file.
func TestEpochFileSameStartReplaces(t *testing.T) {
	f, err := OpenEpochFile(filepath.Join(t.TempDir(), "e"))
	require.NoError(t, err)
	require.NoError(t, f.Append(1, 0))
	require.NoError(t, f.Append(2, 100))
	require.NoError(t, f.Append(3, 100))
	last, ok := f.Last()
	require.True(t, ok)
	require.Equal(t, int32(3), last.Epoch)
	require.Equal(t, []EpochEntry{{1, 0, 100}, {3, 100, math.MaxInt64}}, f.Entries())
}

func TestConsistentPoint(t *testing.T) {
	es := func(pairs ...int64) []EpochEntry {
		var out []EpochEntry
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
		}
		return out
	}
	// Same terms: the shorter end.
	require.Equal(t, int64(150), ConsistentPoint(es(1, 0, 2, 100), 150, es(1, 0, 2, 100), 180))
	// The old master wrote 100..170 in term 2 unreplicated; the new
	// master took over at 120 with term 3: cut at 120.
	require.Equal(t, int64(120), ConsistentPoint(es(1, 0, 2, 100), 170, es(1, 0, 2, 100, 3, 120), 400))
	// The slave had a term the master never saw (its own short
	// mastership): back to the last shared one.
	require.Equal(t, int64(100), ConsistentPoint(es(1, 0, 2, 100), 130, es(1, 0, 3, 100), 300))
	// Upstream #9942: a slave that lagged behind two switches, ending
	// inside term 2.
	require.Equal(t, int64(110), ConsistentPoint(es(1, 0, 2, 100), 110, es(1, 0, 2, 100, 3, 150, 4, 200), 500))
	// Nothing shared.
	require.Equal(t, int64(-1), ConsistentPoint(es(5, 0), 10, es(1, 0), 10))
	require.Equal(t, int64(-1), ConsistentPoint(nil, 0, es(1, 0), 10))
}

func TestAutoSwitchWire(t *testing.T) {
	b := AppendSlaveHandshake(nil, SlaveHandshake{SyncFromLastFile: true, BrokerID: 3})
	require.Len(t, b, SlaveHandshakeSize)
	b = AppendSlaveReport(b, 4096)
	m, n, err := DecodeSlaveMessage(b)
	require.NoError(t, err)
	require.Equal(t, SlaveHandshakeSize, n)
	require.Equal(t, SlaveHandshake{SyncFromLastFile: true, BrokerID: 3}, m.Handshake)
	m, n, err = DecodeSlaveMessage(b[n:])
	require.NoError(t, err)
	require.Equal(t, SlaveReportSize, n)
	require.Equal(t, int64(4096), m.MaxOffset)
	_, n, err = DecodeSlaveMessage(b[:10])
	require.NoError(t, err)
	require.Zero(t, n)
	_, _, err = DecodeSlaveMessage([]byte{0, 0, 0, 9})
	require.ErrorIs(t, err, ErrBadFrame)

	entries := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 4, StartOffset: 77}}
	hs := AppendMasterHandshake(nil, 900, entries)
	require.Len(t, hs, MasterHandshakeSize+24)
	body := []byte("records")
	tr := AppendTransferHeader(nil, len(body), 500, 4, 77, 450)
	require.Len(t, tr, MasterTransferSize)
	tr = append(tr, body...)
	all := append(hs, tr...)
	mm, n, err := DecodeMasterMessage(all)
	require.NoError(t, err)
	require.Equal(t, int64(900), mm.MaxOffset)
	require.Equal(t, int32(4), mm.LastEpoch)
	require.Equal(t, entries, mm.Entries)
	mm, n2, err := DecodeMasterMessage(all[n:])
	require.NoError(t, err)
	require.Equal(t, len(tr), n2)
	require.Equal(t, MasterMessage{State: StateTransfer, StartOffset: 500, Epoch: 4, EpochStart: 77, Confirm: 450, Body: body}, mm)
	_, n, err = DecodeMasterMessage(tr[:len(tr)-1])
	require.NoError(t, err)
	require.Zero(t, n)
}

func FuzzAutoSwitchWire(f *testing.F) {
	f.Add(AppendMasterHandshake(nil, 900, []EpochEntry{{1, 0, 0}, {2, 10, 0}}), true)
	f.Add(append(AppendTransferHeader(nil, 3, 10, 2, 10, 5), 1, 2, 3), true)
	f.Add(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 2}), false)
	f.Add(AppendSlaveReport(nil, 5), false)
	f.Fuzz(func(t *testing.T, b []byte, master bool) {
		if master {
			m, n, err := DecodeMasterMessage(b)
			if err != nil || n == 0 {
				return
			}
			var again []byte
			if m.State == StateHandshake {
				again = AppendMasterHandshake(nil, m.MaxOffset, m.Entries)
				if len(m.Entries) == 0 && m.LastEpoch != -1 {
					return // the last epoch is free when there are no entries
				}
				if len(m.Entries) > 0 && m.LastEpoch != m.Entries[len(m.Entries)-1].Epoch {
					return
				}
			} else {
				again = append(AppendTransferHeader(nil, len(m.Body), m.StartOffset, m.Epoch, m.EpochStart, m.Confirm), m.Body...)
			}
			require.Equal(t, b[:n], again)
			return
		}
		m, n, err := DecodeSlaveMessage(b)
		if err != nil || n == 0 {
			return
		}
		var again []byte
		if m.State == StateHandshake {
			again = AppendSlaveHandshake(nil, m.Handshake)
		} else {
			again = AppendSlaveReport(nil, m.MaxOffset)
		}
		require.Equal(t, b[:n], again)
	})
}

func FuzzParseEpochFile(f *testing.F) {
	f.Add(FormatEpochFile([]EpochEntry{{1, 0, 0}, {3, 40, 0}}))
	f.Add([]byte("1\n0\n7-70\n"))
	f.Add([]byte("x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := ParseEpochFile(b)
		if err != nil {
			return
		}
		again, err := ParseEpochFile(FormatEpochFile(es))
		require.NoError(t, err)
		require.Equal(t, len(es), len(again))
	})
}
