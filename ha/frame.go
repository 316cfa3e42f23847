package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/rocketstore/rocketstore/commitlog"
	"github.com/rocketstore/rocketstore/mappedfile"
)

// Sizes of the wire (DefaultHAConnection.TRANSFER_HEADER_SIZE,
// DefaultHAClient.REPORT_HEADER_SIZE).
const (
	headerSize = 8 + 4
	reportSize = 8
)

// maxFrameBody bounds the body a slave accepts in one frame: its read
// buffer (DefaultHAClient's READ_MAX_BUFFER_SIZE, 4 MiB) less a header.
const maxFrameBody = 4<<20 - headerSize

// ErrBadFrame reports a frame header no master sends.
var ErrBadFrame = errors.New("ha: bad frame")

// putHeader writes a frame header into b (at least headerSize bytes).
func putHeader(b []byte, offset int64, size int) {
	binary.BigEndian.PutUint64(b, uint64(offset))
	binary.BigEndian.PutUint32(b[8:], uint32(size))
}

// frame is one decoded master → slave frame; Body aliases the buffer it
// was decoded from.
type frame struct {
	Offset int64
	Body   []byte
}

// decodeHeader decodes the frame header at the start of b (at least
// headerSize bytes): the offset and size of the frame's body.
func decodeHeader(b []byte) (offset int64, size int, err error) {
	off := int64(binary.BigEndian.Uint64(b))
	sz := int32(binary.BigEndian.Uint32(b[8:]))
	switch {
	case off < 0:
		return 0, 0, fmt.Errorf("%w: offset %d", ErrBadFrame, off)
	case sz < 0 || int(sz) > maxFrameBody:
		return 0, 0, fmt.Errorf("%w: size %d at offset %d", ErrBadFrame, sz, off)
	}
	return off, int(sz), nil
}

// decodeFrame decodes the frame at the start of b. It returns the frame
// and its length, or n 0 when b does not hold a whole frame yet, or an
// ErrBadFrame error.
func decodeFrame(b []byte) (f frame, n int, err error) {
	if len(b) < headerSize {
		return frame{}, 0, nil
	}
	off, size, err := decodeHeader(b)
	if err != nil {
		return frame{}, 0, err
	}
	end := headerSize + size
	if len(b) < end {
		return frame{}, 0, nil
	}
	return frame{Offset: off, Body: b[headerSize:end:end]}, end, nil
}

// framesPerWrite is how many frames the master hands the kernel in one
// writev: a slave behind by more than one frame gets up to 8 ×
// haTransferBatchSize per system call, where RocketMQ writes one frame at
// a time. The frames on the wire are the same.
const framesPerWrite = 8

// frameBatch is the frames of one write, their bodies straight from the
// mapped CommitLog files (pinned until written).
type frameBatch struct {
	hdrs   [framesPerWrite][headerSize]byte
	slices [framesPerWrite]mappedfile.Slice
	iov    [2 * framesPerWrite][]byte
	bufs   net.Buffers
	n      int // frames gathered
}

// gather reads up to framesPerWrite frames of at most batch bytes each from
// cl at from on (never across a file end: each ReadFrom stops there) and
// returns the bytes they carry.
func (b *frameBatch) gather(cl *commitlog.Log, from int64, batch int) (int64, error) {
	b.n = 0
	var total int64
	for b.n < framesPerWrite {
		s, err := cl.ReadFrom(from+total, batch)
		if err != nil {
			b.release()
			return 0, err
		}
		body := s.Bytes()
		if len(body) == 0 {
			s.Release()
			break
		}
		putHeader(b.hdrs[b.n][:], from+total, len(body))
		b.slices[b.n] = s
		b.n++
		total += int64(len(body))
	}
	return total, nil
}

// heartbeat makes the batch one empty frame at next.
func (b *frameBatch) heartbeat(next int64) {
	putHeader(b.hdrs[0][:], next, 0)
	b.slices[0] = mappedfile.Slice{}
	b.n = 1
}

// writeTo writes the frames gathered in one writev and releases their
// bodies.
func (b *frameBatch) writeTo(w io.Writer) error {
	for i := range b.n {
		b.iov[2*i], b.iov[2*i+1] = b.hdrs[i][:], b.slices[i].Bytes()
	}
	b.bufs = b.iov[:2*b.n]
	_, err := b.bufs.WriteTo(w)
	b.release()
	return err
}

func (b *frameBatch) release() {
	for i := range b.n {
		b.slices[i].Release()
		b.slices[i] = mappedfile.Slice{}
	}
	clear(b.iov[:])
	b.n = 0
}
