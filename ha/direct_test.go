package ha

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/mappedfile"
	"github.com/rocketstore/rocketstore/store"
)

// streamFrame is one frame of a hand-made master stream: where it starts
// in the stream, the CommitLog offset it carries and its body's size.
type streamFrame struct {
	at   int
	off  int64
	size int
}

// frameStream cuts the CommitLog bytes log (from offset 0, in files of
// fileSize) into frames of assorted sizes, as no master sends them but as
// the wire allows: full batches, shorter ones, larger ones, heartbeats,
// never across a file end.
func frameStream(rng *rand.Rand, log []byte, fileSize int) ([]byte, []streamFrame) {
	var stream []byte
	var frames []streamFrame
	for off := 0; off < len(log); {
		size := DefaultTransferBatchSize
		switch rng.IntN(8) {
		case 0:
			size = 0 // a heartbeat
		case 1, 2:
			size = 1 + rng.IntN(DefaultTransferBatchSize)
		case 3:
			size = DefaultTransferBatchSize + rng.IntN(DefaultTransferBatchSize)
		}
		size = min(size, len(log)-off, fileSize-off%fileSize)
		frames = append(frames, streamFrame{at: len(stream), off: int64(off), size: size})
		stream = append(stream, encodeFrame(int64(off), log[off:off+size])...)
		off += size
	}
	return stream, frames
}

// acceptSlave accepts the slave's connection on ln and reads its first
// report.
func acceptSlave(t *testing.T, ln net.Listener) (net.Conn, int64) {
	t.Helper()
	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(10*time.Second)))
	c, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	var b [reportSize]byte
	_, err = io.ReadFull(c, b[:])
	require.NoError(t, err)
	return c, int64(binary.BigEndian.Uint64(b[:]))
}

// requireZeroTail checks that the slave's last CommitLog file holds only
// zeros past the end of its log: no byte a read put straight into the
// file and that was not published stays there.
func requireZeroTail(t *testing.T, st *store.MessageStore, dir string) {
	t.Helper()
	end := st.ReplicaOffset()
	size := int64(st.CommitLog().FileSize())
	from := end - end%size
	b, err := os.ReadFile(filepath.Join(dir, "commitlog", mappedfile.FileName(from)))
	require.NoError(t, err)
	tail := b[end-from:]
	if i := bytes.IndexFunc(tail, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("byte %d past the end %d of the slave's log is not zero", i, end)
	}
}

// The stream is written in pieces cut inside headers and bodies, and at
// each cut the test waits until the slave has published the frames before
// it, so that its reads end there: the slave's reads straight into the
// CommitLog meet frames shorter and longer than they expect, split
// anywhere.
func TestSlave_DirectRead_FramesOfAnySizeSplitAnywhere(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 6000)
	total := ms.MaxPhyOffset()
	log, err := readAll(ms.CommitLog(), 0, total)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(15, 1))
	stream, frames := frameStream(rng, log, ms.CommitLog().FileSize())

	dir := t.TempDir()
	ss := openStore(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	startSlave(t, ss, ln.Addr().String(), fastOptions(nil))
	c, from := acceptSlave(t, ln)
	require.Zero(t, from)
	go io.Copy(io.Discard, c) // its reports

	// Cut the stream inside a third of the frames (header or body), and
	// after writing up to a cut wait until the frames before it are in.
	at := 0
	for i, f := range frames {
		if rng.IntN(3) != 0 {
			continue
		}
		cut := f.at + 1 + rng.IntN(headerSize+f.size)
		if rng.IntN(2) == 0 {
			cut = f.at + 1 + rng.IntN(headerSize-1) // inside the header
		}
		_, err := c.Write(stream[at:cut])
		require.NoError(t, err)
		at = cut
		if i > 0 {
			want := frames[i-1].off + int64(frames[i-1].size)
			waitFor(t, 10*time.Second, "the slave to take the frames written", func() bool { return ss.ReplicaOffset() >= want })
		}
	}
	_, err = c.Write(stream[at:])
	require.NoError(t, err)
	waitCaughtUp(t, ms, ss)
	requireSameCommitLog(t, ms, ss)
	requireSameQueues(t, ms, ss, 6000)
	requireZeroTail(t, ss, dir)
}

// A frame at another offset that comes while the slave reads straight into
// its CommitLog is refused: nothing of it is published, and the bytes it
// put into the file are zero again.
func TestSlave_DirectRead_RefusesFrameAtAnotherOffset(t *testing.T) {
	ms := openStore(t, t.TempDir())
	putMessages(t, ms, 0, 2000)
	total := ms.MaxPhyOffset()
	log, err := readAll(ms.CommitLog(), 0, total)
	require.NoError(t, err)
	half := min(int(total/2), ms.CommitLog().FileSize()-1)

	var logs lockedBuffer
	dir := t.TempDir()
	ss := openStore(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	startSlave(t, ss, ln.Addr().String(), fastOptions(testLogger(&logs)))
	c, _ := acceptSlave(t, ln)
	var first []byte
	for off := 0; off < half; off += DefaultTransferBatchSize {
		end := min(off+DefaultTransferBatchSize, half)
		first = append(first, encodeFrame(int64(off), log[off:end])...)
	}
	_, err = c.Write(first)
	require.NoError(t, err)
	waitFor(t, 10*time.Second, "the first frames", func() bool { return ss.ReplicaOffset() == int64(half) })

	// A full batch at the right offset, then one that skips bytes: the
	// read takes both straight into the file.
	end := min(half+DefaultTransferBatchSize, len(log))
	bad := append(encodeFrame(int64(half), log[half:end]), encodeFrame(int64(end+100), log[end:end+500])...)
	_, err = c.Write(bad)
	require.NoError(t, err)
	_, err = io.ReadAll(c) // the slave closes the connection
	require.NoError(t, err)
	waitFor(t, 5*time.Second, "the refusal", func() bool { return bytes.Contains([]byte(logs.String()), []byte("not a prefix of the master's")) })
	require.Equal(t, int64(end), ss.ReplicaOffset(), "the good frame is taken, the bad one not")
	got, err := readAll(ss.CommitLog(), 0, int64(end))
	require.NoError(t, err)
	require.Equal(t, log[:end], got)
	requireZeroTail(t, ss, dir)
}
