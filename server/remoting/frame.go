package remoting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
)

// DefaultMaxFrameSize is the largest frame read by default, length field
// included: 16 MiB, as RocketMQ's com.rocketmq.remoting.frameMaxLength.
const DefaultMaxFrameSize = 16 << 20

// maxHeaderLength is the largest header the 24-bit length can describe.
const maxHeaderLength = 1<<24 - 1

// Errors of the frame codec. Decoding errors wrap one of them; a
// connection that reads one is closed.
var (
	// ErrFrameTooLarge: the length field announces more than the maximum
	// frame size.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrBadFrameLength: the length field is negative, too small to hold
	// the header-length field, or disagrees with the bytes given.
	ErrBadFrameLength = errors.New("remoting: bad frame length")
	// ErrBadHeaderLength: the header length exceeds the frame.
	ErrBadHeaderLength = errors.New("remoting: header length exceeds frame")
	// ErrBadSerializeType: the serialize type byte is neither JSON (0) nor
	// ROCKETMQ (1).
	ErrBadSerializeType = errors.New("remoting: unknown serialize type")
	// ErrBadHeader: the header is not valid JSON or ROCKETMQ, or has fields
	// of the wrong type.
	ErrBadHeader = errors.New("remoting: malformed header")
	// ErrEncode: a command cannot be encoded (a field does not fit its
	// encoding, or the frame would exceed 2 GiB or the header 16 MiB).
	ErrEncode = errors.New("remoting: command cannot be encoded")
)

// appendHead appends the frame's first part for a body of bodyLen bytes:
// total length, serialize type and header length, header.
func (c *Command) appendHead(dst []byte, bodyLen int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch c.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, c)
	case SerializeRocketMQ:
		dst, err = appendRocketMQHeader(dst, c)
	default:
		err = fmt.Errorf("remoting: serialize type %d: %w", c.SerializeType, ErrEncode)
	}
	if err != nil {
		return dst[:start], err
	}
	hlen := len(dst) - start - 8
	if hlen > maxHeaderLength {
		return dst[:start], fmt.Errorf("remoting: header of %d bytes: %w", hlen, ErrEncode)
	}
	total := 4 + int64(hlen) + int64(bodyLen)
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("remoting: frame of %d bytes: %w", total, ErrEncode)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(c.SerializeType)<<24|uint32(hlen))
	return dst, nil
}

// AppendFrame appends c's whole frame (length, type and header length,
// header, body) to dst, in c.SerializeType.
func (c *Command) AppendFrame(dst []byte) ([]byte, error) {
	dst, err := c.appendHead(dst, c.bodyLen())
	if err != nil {
		return dst, err
	}
	if c.BodyParts == nil {
		return append(dst, c.Body...), nil
	}
	for _, p := range c.BodyParts {
		dst = append(dst, p...)
	}
	return dst, nil
}

// WriteTo writes c's frame to w: the head in one Write, then the body.
func (c *Command) WriteTo(w io.Writer) (int64, error) {
	head, err := c.appendHead(make([]byte, 0, 256), c.bodyLen())
	if err != nil {
		return 0, err
	}
	bufs := net.Buffers{head}
	if c.BodyParts == nil {
		bufs = append(bufs, c.Body)
	} else {
		bufs = append(bufs, c.BodyParts...)
	}
	return bufs.WriteTo(w)
}

// Decode decodes one whole frame, length field included. The returned
// command's Body aliases frame.
func Decode(frame []byte) (*Command, error) { return decodeFrame(frame, false) }

func decodeFrame(frame []byte, rawExt bool) (*Command, error) {
	if len(frame) < 8 {
		return nil, fmt.Errorf("remoting: %d bytes, a frame has at least 8: %w", len(frame), ErrBadFrameLength)
	}
	n := int32(binary.BigEndian.Uint32(frame))
	if int64(n) != int64(len(frame))-4 {
		return nil, fmt.Errorf("remoting: length field %d, %d bytes follow: %w", n, len(frame)-4, ErrBadFrameLength)
	}
	if n < 4 {
		return nil, fmt.Errorf("remoting: length field %d, want at least 4: %w", n, ErrBadFrameLength)
	}
	st, hlen, err := parseTypeAndHeaderLength(binary.BigEndian.Uint32(frame[4:]), int(n))
	if err != nil {
		return nil, err
	}
	return decodeRest(st, frame[8:8+hlen], frame[8+hlen:], nil, rawExt, nil, nil)
}

// DecodeRawExt is Decode, leaving the ext fields raw as a server reads
// the requests of a code registered with RawExt: read them with VisitExt
// or Ext.
func DecodeRawExt(frame []byte) (*Command, error) { return decodeFrame(frame, true) }

// parseTypeAndHeaderLength splits the second int32 of a frame whose length
// field is length, and checks both parts before anything is allocated.
func parseTypeAndHeaderLength(v uint32, length int) (SerializeType, int, error) {
	st := SerializeType(v >> 24)
	hlen := int(v & maxHeaderLength)
	if st != SerializeJSON && st != SerializeRocketMQ {
		return 0, 0, fmt.Errorf("remoting: serialize type %d: %w", byte(st), ErrBadSerializeType)
	}
	if hlen > length-4 {
		return 0, 0, fmt.Errorf("remoting: header length %d in a frame of length %d: %w", hlen, length, ErrBadHeaderLength)
	}
	return st, hlen, nil
}

// decodeRest decodes a frame's header and body; ext, when not nil, is an
// empty map to decode the ext fields into. With rawExt the ext fields are
// checked and left undecoded in c.rawExt; with spans too, a JSON ext
// object's members are listed in *spans.
// into, when not nil, is the command to decode into (its old contents
// are dropped) instead of a new one.
func decodeRest(st SerializeType, header, body []byte, ext map[string]string, rawExt bool, spans *[]extMember, into *Command) (*Command, error) {
	c := into
	if c == nil {
		c = &Command{}
	}
	*c = Command{SerializeType: st, ExtFields: ext}
	var err error
	if st == SerializeJSON {
		err = decodeJSONHeader(header, c, rawExt, spans)
	} else {
		err = decodeRocketMQHeader(header, c, rawExt)
	}
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		c.Body = body[:len(body):len(body)]
	}
	return c, nil
}

// FrameReader reads commands from a stream of frames. It is not safe for
// concurrent use.
type FrameReader struct {
	r     *bufio.Reader
	max   int
	head  [8]byte
	spare map[string]string // an empty ext map for the next command, or nil
	// rawExt, when not nil, tells the requests (by code) whose ext fields
	// are left undecoded (see VisitExt).
	rawExt func(code int) bool
	// transient, when not nil, tells the requests (by code) read in place:
	// their Body and raw ext fields alias the read buffer until release.
	// Only with rawExt.
	transient func(code int) bool
	lent      int         // bytes of the frame read in place, to discard at release
	spans     []extMember // the ext members of the frame read in place
	// scratch is the command the requests read in place are decoded into,
	// one after another, while each is done with when its inline
	// processor returns (see keep).
	scratch *Command
}

// NewFrameReader returns a reader of frames from r that refuses frames over
// maxFrameSize bytes, length field included (0: DefaultMaxFrameSize).
func NewFrameReader(r *bufio.Reader, maxFrameSize int) *FrameReader {
	if maxFrameSize <= 0 {
		maxFrameSize = DefaultMaxFrameSize
	}
	return &FrameReader{r: r, max: maxFrameSize}
}

// frameBuffered reports whether ReadCommand can return without reading
// from the stream: a whole frame is buffered, or a length field that
// ReadCommand refuses at once.
func (fr *FrameReader) frameBuffered() bool {
	n := fr.r.Buffered()
	if n < 4 {
		return false
	}
	head, _ := fr.r.Peek(4)
	length := int64(int32(binary.BigEndian.Uint32(head)))
	return length < 4 || length+4 > int64(fr.max) || int64(n) >= length+4
}

// readChunk is how much a frame buffer grows at a time once a frame is
// larger than it: the peer must send the bytes before more is allocated.
const readChunk = 1 << 20

// ReadCommand reads the next frame and decodes it. It returns io.EOF at a
// clean end of stream, io.ErrUnexpectedEOF inside a frame, and an error
// wrapping one of the codec errors for a bad frame. The returned command
// owns its memory.
func (fr *FrameReader) ReadCommand() (*Command, error) {
	if _, err := io.ReadFull(fr.r, fr.head[:4]); err != nil {
		return nil, err // io.EOF only when no byte of a frame was read
	}
	n := int32(binary.BigEndian.Uint32(fr.head[:4]))
	if n < 4 {
		return nil, fmt.Errorf("remoting: length field %d, want at least 4: %w", n, ErrBadFrameLength)
	}
	if int64(n)+4 > int64(fr.max) {
		return nil, fmt.Errorf("remoting: frame of %d bytes, the maximum is %d: %w", int64(n)+4, fr.max, ErrFrameTooLarge)
	}
	if _, err := io.ReadFull(fr.r, fr.head[4:8]); err != nil {
		return nil, noEOF(err)
	}
	st, hlen, err := parseTypeAndHeaderLength(binary.BigEndian.Uint32(fr.head[4:8]), int(n))
	if err != nil {
		return nil, err
	}
	if fr.transient != nil && int(n)-4 <= fr.r.Size() {
		return fr.readInPlace(st, hlen, int(n)-4)
	}
	buf, err := fr.readN(int(n) - 4)
	if err != nil {
		return nil, err
	}
	return fr.decodeOwned(st, buf, hlen)
}

// decodeOwned decodes a frame (after its head) read into a buffer of its
// own.
func (fr *FrameReader) decodeOwned(st SerializeType, buf []byte, hlen int) (*Command, error) {
	if fr.rawExt != nil {
		if code, ok := leadingCode(st, buf[:hlen]); !ok || fr.rawExt(code) {
			return fr.decodeRaw(st, buf[:hlen], buf[hlen:])
		}
		// A code read as before: into a map at once. (Should a JSON
		// header repeat "code" and end at a RawExt one, its processor
		// gets the map: VisitExt reads it the same.)
	}
	ext := fr.spare
	fr.spare = nil
	cmd, err := decodeRest(st, buf[:hlen], buf[hlen:], ext, false, nil, nil)
	if err == nil && len(cmd.ExtFields) == 0 && cmd.ExtFields != nil && ext != nil {
		cmd.ExtFields = nil // a header without ext fields reads as before
		fr.spare = ext
	}
	return cmd, err
}

// readInPlace reads a frame of rest bytes after its head: in place when it
// is a request of a transient code (the bytes stay in the read buffer
// until release), else copied as ReadCommand does.
func (fr *FrameReader) readInPlace(st SerializeType, hlen, rest int) (*Command, error) {
	b, err := fr.r.Peek(rest)
	if err != nil {
		return nil, noEOF(err)
	}
	if code, ok := leadingCode(st, b[:hlen]); ok && fr.transient(code) {
		if fr.scratch == nil {
			fr.scratch = new(Command)
		}
		cmd, err := decodeRest(st, b[:hlen], b[hlen:], nil, true, &fr.spans, fr.scratch)
		if err != nil {
			return nil, err
		}
		if !cmd.IsResponse() && fr.transient(cmd.Code) {
			cmd.lent = true
			if cmd.rawExt != nil && st == SerializeJSON {
				cmd.spans = fr.spans
			}
			fr.lent = rest
			return cmd, nil
		}
	}
	buf := append(make([]byte, 0, rest), b...)
	if _, err := fr.r.Discard(rest); err != nil {
		return nil, err
	}
	return fr.decodeOwned(st, buf, hlen)
}

// keep tells the reader that cmd, which it returned, outlives the next
// read: it is not decoded over.
func (fr *FrameReader) keep(cmd *Command) {
	if cmd == fr.scratch {
		fr.scratch = nil
	}
}

// release ends the loan of the frame read in place, if any: its bytes in
// the read buffer may be read over.
func (fr *FrameReader) release() {
	if fr.lent > 0 {
		fr.r.Discard(fr.lent) // buffered: cannot fail
		fr.lent = 0
	}
}

// leadingCode reads the code of a header cheaply, without decoding it:
// the ROCKETMQ header's first int16, or a JSON header's first member when
// it is "code" (as every client writes it). ok is false when it cannot
// tell.
func leadingCode(st SerializeType, h []byte) (code int, ok bool) {
	if st == SerializeRocketMQ {
		if len(h) < 2 {
			return 0, false
		}
		return int(int16(binary.BigEndian.Uint16(h))), true
	}
	const prefix = `{"code":`
	if len(h) <= len(prefix) || string(h[:len(prefix)]) != prefix {
		return 0, false
	}
	for _, c := range h[len(prefix):] {
		switch {
		case c >= '0' && c <= '9' && code < 1<<20:
			code = code*10 + int(c-'0')
			ok = true
		case c == ',' || c == '}':
			return code, ok
		default:
			return 0, false
		}
	}
	return 0, false
}

// decodeRaw decodes a frame leaving its ext fields raw, then decodes them
// into a map (the spare one, if any) unless the frame is a request of a
// code whose ext fields stay raw. The code is known only once the whole
// header is read: JSON keys come in any order.
func (fr *FrameReader) decodeRaw(st SerializeType, header, body []byte) (*Command, error) {
	cmd, err := decodeRest(st, header, body, nil, true, nil, nil)
	if err != nil || cmd.rawExt == nil || !cmd.IsResponse() && fr.rawExt(cmd.Code) {
		return cmd, err
	}
	ext := fr.spare
	fr.spare = nil
	if err := cmd.materializeExt(ext); err != nil {
		return nil, err
	}
	if len(cmd.ExtFields) == 0 && ext != nil {
		cmd.ExtFields = nil // a header without ext fields reads as before
		fr.spare = ext
	}
	return cmd, nil
}

// maxRecycledExt is the largest ext map kept for the next command.
const maxRecycledExt = 64

// recycle gives back the ext map of a command that nothing refers to any
// longer, for the next command read to fill: a request's map is most of
// what decoding it allocates.
func (fr *FrameReader) recycle(m map[string]string) {
	if m != nil && len(m) <= maxRecycledExt {
		clear(m)
		fr.spare = m
	}
}

// readN reads exactly n bytes into a new slice, growing it as the bytes
// arrive once n is over readChunk.
func (fr *FrameReader) readN(n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, readChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), cap(buf)))
		}
		end := min(n, cap(buf))
		if _, err := io.ReadFull(fr.r, buf[len(buf):end]); err != nil {
			return nil, noEOF(err)
		}
		buf = buf[:end]
	}
	return buf, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
