package ha

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A slave reads the master's frames straight into its CommitLog's free
// space, with one readv(2) for many frames, instead of reading them into
// its buffer and copying the bodies out: it expects each next frame to
// carry as much as the largest it has seen (the master's
// haTransferBatchSize, which a master fills while it is behind), so it lays
// out the read as header slots, each followed by that many bytes of
// CommitLog space, up to the end of the file and then its buffer. A frame
// that comes shorter (the tail of the master's log, a heartbeat, the end
// of a file) ends the layout: what followed it in the read is moved to the
// buffer, the space it landed in is zeroed again, and the buffer's frames
// are appended as before (directRead.spill). Nothing is published before
// its frame's header was read and checked, and the bytes past what was
// published are zero again before the read returns.

const (
	// directWindow bounds the CommitLog bytes one direct read expects.
	directWindow = 2 << 20
	// overflowSize is how much of a direct read may go to the buffer,
	// past what it expects (as at the end of a file): bytes the buffer
	// takes are copied once more. It and the window fit in the buffer.
	overflowSize = 128 << 10
	// maxDirectFrames bounds the frames one direct read expects.
	maxDirectFrames = 128
)

// errDirect reports a direct read that cannot go on (the store refused
// the bytes); the slave closes the connection.
var errDirect = errors.New("ha: direct read")

// directRead is a slave's state between direct reads; only its loop uses it.
type directRead struct {
	raw      syscall.RawConn // nil: not a TCP connection, read into the buffer only
	predict  int             // the largest frame body seen: what a frame is expected to carry
	lastRead int             // the bytes the last read brought
	// Between reads at most one of these is set: the next bytes are the
	// rest of a frame's body (bodyLeft bytes) or of a frame's header
	// (hdrs[0][:hdrHave] came already).
	bodyLeft int
	hdrHave  int
	hdrs     [maxDirectFrames][headerSize]byte
	// One read's layout: its iovecs, and for each where it is: its
	// position in the space (>= 0), -1-i for frame i's header slot, or
	// overflowPart for the buffer; then how many bytes each took, and how
	// many of the space's were published.
	iovs      [][]byte
	vecs      []unix.Iovec // iovs for the syscall
	at        []int
	filled    []int
	published int
}

// reset forgets a connection's state: a new one starts at a frame.
func (d *directRead) reset(raw syscall.RawConn) {
	d.raw, d.bodyLeft, d.hdrHave = raw, 0, 0
}

// directUsable reports whether reads may go straight to the CommitLog: a
// TCP connection, a frame size learned, and a CommitLog that holds
// something (an empty one takes its first bytes with AppendReplica, which
// chooses where it starts).
func (s *Slave) directUsable() bool {
	d := &s.direct
	return d.raw != nil && d.predict > 0 && s.st.ReplicaOffset() != 0
}

// handOff moves the start of a frame left in the buffer (less than a whole
// frame) into the direct state: a partial header to hdrs[0], a header and
// part of its body into the CommitLog, published, the rest of the body
// then expected straight into the space.
func (s *Slave) handOff(b []byte, addr string) error {
	d := &s.direct
	if len(b) < headerSize {
		d.hdrHave = copy(d.hdrs[0][:], b)
		return nil
	}
	end := s.st.ReplicaOffset()
	off, size, err := decodeHeader(b)
	if err != nil {
		return err
	}
	if off != end {
		return s.refuse(addr, off, end)
	}
	body := b[headerSize:]
	sp, err := s.st.ReplicaSpace(end)
	if err != nil {
		return fmt.Errorf("%w: %w", errDirect, err)
	}
	defer sp.Release()
	if size > len(sp.Bytes()) {
		return fmt.Errorf("%w: a frame of %d bytes at %d crosses the end of a CommitLog file", ErrBadFrame, size, off)
	}
	if err := s.st.CommitReplica(end, copy(sp.Bytes(), body)); err != nil {
		return fmt.Errorf("%w: %w", errDirect, err)
	}
	d.bodyLeft = size - len(body)
	return nil
}

// errRefused ends a connection to a master whose log this slave's is not
// a prefix of (the log line is written).
var errRefused = errors.New("ha: refused the master's data")

func (s *Slave) refuse(addr string, masterOffset, slaveOffset int64) error {
	s.log.Error("ha: refusing the master's data: it pushed an offset that is not the end of this slave's CommitLog, so this slave's log is not a prefix of the master's; nothing was written",
		"master", addr, "masterOffset", masterOffset, "slaveOffset", slaveOffset)
	return errRefused
}

// readDirect reads once from the master straight into the CommitLog's
// free space, publishes the bytes of the frames that came as expected, and
// leaves the rest, from a frame's start, in s.buf[:w]. n is the bytes
// read.
func (s *Slave) readDirect(addr string) (n, w int, err error) {
	d := &s.direct
	end := s.st.ReplicaOffset()
	sp, err := s.st.ReplicaSpace(end)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errDirect, err)
	}
	defer sp.Release()
	space := sp.Bytes()
	if d.bodyLeft > len(space) {
		return 0, 0, fmt.Errorf("%w: a frame at %d crosses the end of a CommitLog file", ErrBadFrame, end)
	}
	s.layOut(space)
	n, err = d.readv()
	if n == 0 {
		clear(d.iovs) // holds no view of the space past Release
		return 0, 0, err
	}
	d.fill(n)
	d.lastRead = n
	w, err = s.walk(space, end, addr)
	clear(space[d.published:d.spaceWritten()])
	clear(d.iovs)
	return n, w, err
}

// layOut makes the read's iovecs: the rest of a body, or frames (header
// slot, then space for the expected body) up to the end of the file or the
// window, then the buffer.
func (s *Slave) layOut(space []byte) {
	d := &s.direct
	d.iovs, d.at = d.iovs[:0], d.at[:0]
	pos := 0
	if d.bodyLeft > 0 {
		n := min(d.bodyLeft, len(space))
		d.iovs, d.at = append(d.iovs, space[:n]), append(d.at, 0)
		pos = n
	}
	// The frames' space stays within directWindow, so that what a spill
	// moves fits in the buffer before the part read into it.
	// As many frames as the last read brought, and then some: a slave that
	// keeps up reads one short frame at a time, and its reads stay small.
	frames := min(maxDirectFrames, 2+2*d.lastRead/(d.predict+headerSize))
	for frame, laid := 0, 0; frame < frames && pos < len(space); frame++ {
		body := min(d.predict, len(space)-pos)
		if laid+body > directWindow {
			break
		}
		start := 0
		if frame == 0 {
			start = d.hdrHave
		}
		d.iovs = append(d.iovs, d.hdrs[frame][start:], space[pos:pos+body])
		d.at = append(d.at, -1-frame, pos)
		pos += body
		laid += body
	}
	if len(d.iovs) == 0 { // the file is full: a header's rest only
		d.iovs, d.at = append(d.iovs, d.hdrs[0][d.hdrHave:]), append(d.at, -1)
	}
	d.iovs = append(d.iovs, s.buf[:overflowSize])
	d.at = append(d.at, overflowPart)
	d.published = 0
}

// fill records how many of the n bytes read each iovec took.
func (d *directRead) fill(n int) {
	d.filled = d.filled[:0]
	for _, v := range d.iovs {
		t := min(n, len(v))
		d.filled = append(d.filled, t)
		n -= t
	}
}

// spaceWritten is the end of the space the read wrote into.
func (d *directRead) spaceWritten() int {
	end := d.published
	for k, at := range d.at {
		if at >= 0 && d.filled[k] > 0 {
			end = max(end, at+d.filled[k])
		}
	}
	return end
}

// walk publishes the frames the read brought as laid out, from end on,
// and moves what follows the first one that was not to the buffer; it
// returns the bytes left there.
func (s *Slave) walk(space []byte, end int64, addr string) (int, error) {
	d := &s.direct
	publish := func(k int) error {
		if k == 0 {
			return nil
		}
		if err := s.st.CommitReplica(end, k); err != nil {
			return fmt.Errorf("%w: %w", errDirect, err)
		}
		end += int64(k)
		d.published += k
		return nil
	}
	k := 0
	if d.bodyLeft > 0 {
		t := d.filled[0]
		d.bodyLeft -= t
		if err := publish(t); err != nil || d.bodyLeft > 0 {
			return 0, err
		}
		k = 1
	}
	for ; d.at[k] < 0 && d.at[k] != overflowPart; k += 2 {
		if d.filled[k] == 0 {
			return 0, nil
		}
		slot := d.hdrs[-1-d.at[k]][:]
		start := headerSize - len(d.iovs[k])
		if got := start + d.filled[k]; got < headerSize {
			d.hdrHave = copy(d.hdrs[0][:], slot[:got]) // the next read brings the rest
			return 0, nil
		}
		d.hdrHave = 0
		off, size, err := decodeHeader(slot)
		if err == nil && off != end {
			err = s.refuse(addr, off, end)
		}
		if err != nil {
			return 0, err
		}
		if k+1 >= len(d.at) || d.at[k+1] < 0 { // the file is full: no space laid out
			return s.spill(slot, k+1, 0), nil
		}
		body, got := len(d.iovs[k+1]), d.filled[k+1]
		if size > body { // larger than expected: the buffer takes it
			d.predict = size
			return s.spill(slot, k+1, 0), nil
		}
		d.predict = max(d.predict, size)
		if got < size { // the rest of its body comes next
			d.bodyLeft = size - got
			return 0, publish(got)
		}
		if err := publish(size); err != nil {
			return 0, err
		}
		if size < body { // shorter than expected: what came after goes to the buffer
			return s.spill(nil, k+1, size), nil
		}
	}
	return d.filled[len(d.filled)-1], nil // the buffer holds it from a frame's start
}

// spill moves to the buffer, in their order, prefix and the bytes read
// from iovec k on (skipping its first skip bytes), behind which the bytes
// that went straight to the buffer already are moved. It returns the
// bytes then in the buffer.
func (s *Slave) spill(prefix []byte, k, skip int) int {
	d := &s.direct
	last := len(d.iovs) - 1
	moved := len(prefix)
	for j := k; j < last; j++ {
		moved += d.filled[j]
	}
	moved -= skip
	over := d.filled[last]
	copy(s.buf[moved:moved+over], s.buf[:over])
	w := copy(s.buf, prefix)
	for j := k; j < last; j++ {
		w += copy(s.buf[w:], d.iovs[j][skip:d.filled[j]])
		skip = 0
	}
	return w + over
}

// overflowPart marks the buffer in directRead.at.
const overflowPart = -1 << 30

// readv reads into d.iovs from the connection, waiting for it as a Read
// does (deadlines included); 0 bytes and no error is the end of the
// stream. It reuses its iovec array (unix.Readv makes one per call).
func (d *directRead) readv() (int, error) {
	d.vecs = d.vecs[:0]
	for _, b := range d.iovs {
		v := unix.Iovec{}
		if len(b) > 0 {
			v.Base = &b[0]
			v.SetLen(len(b))
		}
		d.vecs = append(d.vecs, v)
	}
	var n int
	var rerr error
	err := d.raw.Read(func(fd uintptr) bool {
		for {
			r, _, e := unix.Syscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&d.vecs[0])), uintptr(len(d.vecs)))
			n, rerr = int(r), nil
			if e != 0 {
				n, rerr = 0, e
			}
			if rerr != unix.EINTR {
				return rerr != unix.EAGAIN
			}
		}
	})
	clear(d.vecs) // holds no pointer into the space past its Release
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
