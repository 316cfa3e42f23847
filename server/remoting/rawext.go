package remoting

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Raw ext fields: the requests of a code registered with RawExt are read
// without building their ExtFields map. The ext fields stay in the header
// as read (JSON object text or the ROCKETMQ ext block, checked already),
// and the processor reads the ones it wants with VisitExt, which costs no
// map, no hashing and no strings: most of what decoding a send header
// cost.

// ExtField is one ext field, as VisitExt gives it. Its slices alias the
// command: valid while the command is.
type ExtField struct {
	// Key is the field's name.
	Key []byte
	// Null marks a JSON null: the key reads as absent (a later field of
	// the same key may set it again).
	Null bool

	raw     []byte // the value: a JSON string's inside, or other JSON text, or the ROCKETMQ value
	escaped bool   // raw is a JSON string's inside that needs unquoting
}

// AppendValue appends the field's value to dst: a JSON string unescaped, a
// JSON value of another kind as its text. It allocates only when dst is
// too small.
func (f ExtField) AppendValue(dst []byte) []byte {
	if f.escaped {
		return appendUnquoted(dst, f.raw)
	}
	return append(dst, f.raw...)
}

// Empty reports whether the field's value is "" (or a null's).
func (f ExtField) Empty() bool { return len(f.raw) == 0 }

// Value returns the field's value, allocating only for a JSON string with
// escapes.
func (f ExtField) Value() []byte {
	if f.escaped {
		return unquote(f.raw)
	}
	return f.raw
}

// Int64 parses the field's value as a decimal integer, as
// strconv.ParseInt(value, 10, 64) does (its error too), allocating nothing
// for the usual text.
func (f ExtField) Int64() (int64, error) {
	if !f.escaped {
		if n, ok := parseDecimal(f.raw, 64); ok {
			return n, nil
		}
	}
	return strconv.ParseInt(string(f.Value()), 10, 64)
}

// VisitExt calls fn with each ext field of c: in the order they were read
// when c was read with raw ext fields, else in the map's order (from a
// copy). A JSON field read twice comes twice (the last one counts).
func (c *Command) VisitExt(fn func(ExtField)) {
	switch {
	case c.rawExt == nil:
		for k, v := range c.ExtFields {
			fn(ExtField{Key: []byte(k), raw: []byte(v)})
		}
	case c.SerializeType == SerializeRocketMQ:
		_ = walkRocketMQExt(c.rawExt, func(ks, ke, vs, ve int) {
			fn(ExtField{Key: c.rawExt[ks:ke:ke], raw: c.rawExt[vs:ve:ve]})
		})
	case c.spans != nil: // listed when read
		for _, m := range c.spans {
			fn(c.jsonField(m.key, m.val, m.kind))
		}
	default:
		d := jsonReader{b: c.rawExt}
		_ = d.eachExt(func(k, v extSpan, kind extKind) { fn(c.jsonField(k, v, kind)) })
	}
}

// jsonField is the ExtField of a member of c's raw JSON ext object.
func (c *Command) jsonField(k, v extSpan, kind extKind) ExtField {
	b := c.rawExt
	key := b[k.start:k.end:k.end]
	if k.escaped {
		key = unquote(key)
	}
	return ExtField{Key: key, Null: kind == extNull, raw: b[v.start:v.end:v.end], escaped: v.escaped}
}

// HasRawExt reports whether c's ext fields were left undecoded (ExtFields
// is nil: read them with VisitExt or Ext).
func (c *Command) HasRawExt() bool { return c.rawExt != nil }

// extMember is where one member of a JSON ext object lies, from the
// object's start.
type extMember struct {
	key, val extSpan
	kind     extKind
}

// extText consumes the ext value of a JSON header, checking it, and
// returns its text: nil for null. With spans it lists the members in
// *spans, from its start.
func (d *jsonReader) extText(spans *[]extMember) ([]byte, error) {
	if d.literal("null") {
		return nil, nil
	}
	d.skipSpace()
	start := d.i
	var f func(k, v extSpan, kind extKind)
	if spans != nil {
		*spans = (*spans)[:0]
		f = func(k, v extSpan, kind extKind) {
			k.start, k.end = k.start-start, k.end-start
			if kind != extNull {
				v.start, v.end = v.start-start, v.end-start
			}
			*spans = append(*spans, extMember{key: k, val: v, kind: kind})
		}
	}
	if err := d.eachExt(f); err != nil {
		return nil, err
	}
	return d.b[start:d.i:d.i], nil
}

// materializeExt turns raw ext fields into ExtFields, decoded into dst
// (empty) or a new map when dst is nil.
func (c *Command) materializeExt(dst map[string]string) error {
	raw := c.rawExt
	if raw == nil {
		return nil
	}
	c.rawExt, c.spans = nil, nil
	if c.SerializeType == SerializeRocketMQ {
		m, err := decodeRocketMQExt(raw, dst)
		c.ExtFields = m
		return err
	}
	d := jsonReader{b: raw}
	m, err := d.readExtFields(dst)
	c.ExtFields = m
	return err
}

// extLookup returns the value of key among raw ext fields.
func (c *Command) extLookup(key string) (string, bool) {
	var v string
	found := false
	c.VisitExt(func(f ExtField) {
		if string(f.Key) == key {
			v, found = string(f.Value()), !f.Null
		}
	})
	return v, found
}

// rawExtMap is c's raw ext fields as a new map (for String and Clone).
func (c *Command) rawExtMap() map[string]string {
	m := map[string]string{}
	c.VisitExt(func(f ExtField) {
		if f.Null {
			delete(m, string(f.Key))
		} else {
			m[string(f.Key)] = string(f.Value())
		}
	})
	return m
}

// walkRocketMQExt checks a ROCKETMQ ext block (key length int16, key,
// value length int32, value, repeated) and calls f, when not nil, with the
// spans of each key and value.
func walkRocketMQExt(b []byte, f func(ks, ke, vs, ve int)) error {
	for i := 0; i < len(b); {
		if len(b)-i < 2 {
			return fmt.Errorf("remoting: ROCKETMQ ext key length cut short: %w", ErrBadHeader)
		}
		n := int(binary.BigEndian.Uint16(b[i:]))
		ks := i + 2
		if n > len(b)-ks {
			return fmt.Errorf("remoting: ROCKETMQ ext key of %d bytes, %d left: %w", n, len(b)-ks, ErrBadHeader)
		}
		vs, ve, err := int32Span(b, ks+n, "ext value")
		if err != nil {
			return err
		}
		if f != nil {
			f(ks, ks+n, vs, ve)
		}
		i = ve
	}
	return nil
}

// decodeRocketMQExt decodes a ROCKETMQ ext block into dst (empty), or a
// new map when dst is nil. Strings are cut from one copy of b.
func decodeRocketMQExt(b []byte, dst map[string]string) (map[string]string, error) {
	if dst == nil {
		dst = make(map[string]string, countRocketMQExt(b))
	}
	var bs string
	err := walkRocketMQExt(b, func(ks, ke, vs, ve int) {
		if bs == "" {
			bs = string(b)
		}
		key, ok := knownKeys[string(b[ks:ke])]
		if !ok {
			key = bs[ks:ke]
		}
		dst[key] = bs[vs:ve]
	})
	return dst, err
}
