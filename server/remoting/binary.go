package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
)

// rocketMQFixedHeader is the size of the ROCKETMQ header without remark and
// ext fields: code 2, language 1, version 2, opaque 4, flag 4, remark
// length 4, ext length 4.
const rocketMQFixedHeader = 21

// appendRocketMQHeader appends c's header in RocketMQ's binary form
// (RocketMQSerializable.rocketMQProtocolEncode). Code and Version must fit
// in an int16, keys in 65535 bytes.
func appendRocketMQHeader(dst []byte, c *Command) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 {
		return dst, fmt.Errorf("remoting: code %d does not fit the ROCKETMQ header's int16: %w", c.Code, ErrEncode)
	}
	if c.Version < math.MinInt16 || c.Version > math.MaxInt16 {
		return dst, fmt.Errorf("remoting: version %d does not fit the ROCKETMQ header's int16: %w", c.Version, ErrEncode)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Code)))
	dst = append(dst, languageCode(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	for k, v := range c.ExtFields {
		if dst, err = appendRocketMQExt(dst, k, v); err != nil {
			return dst, err
		}
	}
	for i := 0; i+1 < len(c.ExtList); i += 2 {
		if dst, err = appendRocketMQExt(dst, c.ExtList[i], c.ExtList[i+1]); err != nil {
			return dst, err
		}
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst, nil
}

// appendRocketMQExt appends one ext field of a ROCKETMQ header.
func appendRocketMQExt(dst []byte, k, v string) ([]byte, error) {
	if len(k) > math.MaxUint16 {
		return dst, fmt.Errorf("remoting: ext key of %d bytes does not fit the ROCKETMQ header: %w", len(k), ErrEncode)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...), nil
}

// decodeRocketMQHeader reads a ROCKETMQ header into c. Every length is
// checked against what is left of the header; the remark and ext fields
// must fill the header exactly. With rawExt the ext block is checked but
// not decoded: c.rawExt is it (nil when empty).
func decodeRocketMQHeader(h []byte, c *Command, rawExt bool) error {
	if len(h) < rocketMQFixedHeader {
		return fmt.Errorf("remoting: ROCKETMQ header of %d bytes, want at least %d: %w", len(h), rocketMQFixedHeader, ErrBadHeader)
	}
	c.Code = int(int16(binary.BigEndian.Uint16(h)))
	c.Language = languageName(h[2])
	c.Version = int(int16(binary.BigEndian.Uint16(h[3:])))
	c.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(h[9:]))
	rs, re, err := int32Span(h, 13, "remark")
	if err != nil {
		return err
	}
	if rs < re {
		c.Remark = string(h[rs:re])
	}
	es, ee, err := int32Span(h, re, "ext fields")
	if err != nil {
		return err
	}
	if ee != len(h) {
		return fmt.Errorf("remoting: ROCKETMQ header has %d bytes after its ext fields: %w", len(h)-ee, ErrBadHeader)
	}
	if es == ee {
		return nil
	}
	if rawExt {
		if err := walkRocketMQExt(h[es:ee], nil); err != nil {
			return err
		}
		c.rawExt = h[es:ee:ee]
		return nil
	}
	m, err := decodeRocketMQExt(h[es:ee], c.ExtFields)
	c.ExtFields = m
	return err
}

// int32Span reads an int32 length at b[i:] and returns the span of that
// many bytes after it.
func int32Span(b []byte, i int, what string) (start, end int, err error) {
	if len(b)-i < 4 {
		return 0, 0, fmt.Errorf("remoting: ROCKETMQ %s length cut short: %w", what, ErrBadHeader)
	}
	n := int32(binary.BigEndian.Uint32(b[i:]))
	start = i + 4
	if n < 0 || int(n) > len(b)-start {
		return 0, 0, fmt.Errorf("remoting: ROCKETMQ %s of %d bytes, %d left: %w", what, n, len(b)-start, ErrBadHeader)
	}
	return start, start + int(n), nil
}

// countRocketMQExt counts the entries of a ROCKETMQ ext block, stopping at
// the first that does not fit (decoding then reports it).
func countRocketMQExt(b []byte) int {
	n := 0
	for i := 0; len(b)-i >= 2; n++ {
		i += 2 + int(binary.BigEndian.Uint16(b[i:]))
		if len(b)-i < 4 {
			break
		}
		v := int32(binary.BigEndian.Uint32(b[i:]))
		if v < 0 {
			break
		}
		i += 4 + int(v)
	}
	return n
}
