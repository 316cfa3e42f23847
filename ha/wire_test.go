package ha

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests speak the HA wire by hand, as an Apache RocketMQ peer would.

func writeReport(t *testing.T, c net.Conn, off int64) {
	t.Helper()
	var b [reportSize]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	_, err := c.Write(b[:])
	require.NoError(t, err)
}

func readFrame(t *testing.T, c net.Conn) (int64, []byte, error) {
	t.Helper()
	var h [headerSize]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return 0, nil, err
	}
	size := int32(binary.BigEndian.Uint32(h[8:]))
	require.GreaterOrEqual(t, size, int32(0))
	require.LessOrEqual(t, size, int32(DefaultTransferBatchSize))
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, nil, err
	}
	return int64(binary.BigEndian.Uint64(h[:])), body, nil
}

func TestMaster_Wire_FramesHeartbeatsAndHousekeeping(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 3000)
	opts := fastOptions(nil)
	opts.HousekeepingInterval = 600 * time.Millisecond
	m := startMaster(t, ms, opts)
	c, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	writeReport(t, c, 0)

	var got []byte
	next := int64(0)
	for next < ms.MaxPhyOffset() {
		off, body, err := readFrame(t, c)
		require.NoError(t, err)
		require.Equal(t, next, off, "frames follow each other")
		if off/int64(ms.CommitLog().FileSize()) != (off+int64(len(body))-1)/int64(ms.CommitLog().FileSize()) && len(body) > 0 {
			t.Fatalf("frame at %d of %d bytes crosses a file end", off, len(body))
		}
		got = append(got, body...)
		next += int64(len(body))
	}
	want, err := readAll(ms.CommitLog(), 0, next)
	require.NoError(t, err)
	require.Equal(t, want, got)
	writeReport(t, c, next)
	waitFor(t, 5*time.Second, "the ack", func() bool { return m.AckedOffset() == next })

	// Nothing new: heartbeats of size 0 at the next offset; then, as this
	// "slave" reports nothing more, the master closes after housekeeping.
	start := time.Now()
	heartbeats := 0
	for {
		off, body, err := readFrame(t, c)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		require.Equal(t, next, off)
		require.Empty(t, body)
		heartbeats++
	}
	require.GreaterOrEqual(t, heartbeats, 2)
	require.GreaterOrEqual(t, time.Since(start), opts.HousekeepingInterval/2)
	waitFor(t, 5*time.Second, "the slave to be dropped", func() bool { return m.Slaves() == 0 })
}

func TestMaster_RefusesSlaveAheadOfIt(t *testing.T) {
	var logs lockedBuffer
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 10)
	m := startMaster(t, ms, fastOptions(testLogger(&logs)))
	c, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	writeReport(t, c, ms.MaxPhyOffset()+1000)
	_, _, err = readFrame(t, c)
	require.ErrorIs(t, err, io.EOF)
	require.Contains(t, logs.String(), "not a prefix")
}

func TestSlave_RefusesFrameAtAnotherOffset_AndReconnects(t *testing.T) {
	var logs lockedBuffer
	ss := openStore(t, t.TempDir())
	putMessages(t, ss, 0, 10) // the slave has a log of its own
	had := ss.MaxPhyOffset()
	before, err := readAll(ss.CommitLog(), 0, had)
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	startSlave(t, ss, ln.Addr().String(), fastOptions(testLogger(&logs)))
	for round := 0; round < 2; round++ { // the slave comes back after the refusal
		require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(10*time.Second)))
		c, err := ln.Accept()
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
		var b [reportSize]byte
		_, err = io.ReadFull(c, b[:])
		require.NoError(t, err)
		require.Equal(t, had, int64(binary.BigEndian.Uint64(b[:])))
		_, err = c.Write(encodeFrame(had+100, []byte("not where the slave ends")))
		require.NoError(t, err)
		_, err = io.ReadAll(c) // the slave closes the connection
		require.NoError(t, err)
		c.Close()
	}
	require.Equal(t, had, ss.MaxPhyOffset())
	after, err := readAll(ss.CommitLog(), 0, had)
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Contains(t, logs.String(), "not a prefix of the master's")
}

func TestSlave_ReportsOnHeartbeat(t *testing.T) {
	ss := openStore(t, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	startSlave(t, ss, ln.Addr().String(), fastOptions(nil))
	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(10*time.Second)))
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	start := time.Now()
	var b [3 * reportSize]byte // the report at connect and two heartbeats
	_, err = io.ReadFull(c, b[:])
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 2*fastOptions(nil).HeartbeatInterval-20*time.Millisecond)
	require.Equal(t, make([]byte, len(b)), b[:], "an empty slave reports 0")
}
