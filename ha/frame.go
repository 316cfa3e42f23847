package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// decodeHeader decodes the frame header at the start of b (at least
// headerSize bytes): the frame's offset and body size, or an ErrBadFrame
// error.
func decodeHeader(b []byte) (off int64, size int, err error) {
	off = int64(binary.BigEndian.Uint64(b))
	sz := int32(binary.BigEndian.Uint32(b[8:]))
	switch {
	case off < 0:
		return 0, 0, fmt.Errorf("%w: offset %d", ErrBadFrame, off)
	case sz < 0 || int(sz) > maxFrameBody:
		return 0, 0, fmt.Errorf("%w: size %d at offset %d", ErrBadFrame, sz, off)
	}
	return off, int(sz), nil
}
