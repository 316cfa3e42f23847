package fastjson

import (
	"strconv"
	"unicode/utf8"
)

// A Writer appends one JSON value in fastjson's layout to a byte slice.
// Open containers with BeginObject, BeginIntMap or BeginArray and close
// each with End; inside an object write Key before each value, inside a
// number-keyed map IntKey. Keys are written in the order given: sort them
// for stable bytes. Misuse (a value without its key, End with nothing
// open) is a bug in the caller and panics.
//
// The zero Writer writes compact JSON into a new slice. A Writer is not
// safe for concurrent use.
type Writer struct {
	buf    []byte
	pretty bool
	stack  []frame
}

type frameKind uint8

const (
	kindObject frameKind = iota + 1
	kindIntMap
	kindArray
)

type frame struct {
	kind frameKind
	n    int  // members or elements written
	key  bool // a key was written and awaits its value
}

// NewWriter returns a Writer that appends to dst, in fastjson's pretty
// form (PrettyFormat: tabs and new lines, as RocketMQ's config files) if
// pretty, else compact (as RocketMQ's remoting bodies).
func NewWriter(dst []byte, pretty bool) *Writer {
	return &Writer{buf: dst, pretty: pretty}
}

// Bytes returns the slice appended to. It stays valid until the next
// write.
func (w *Writer) Bytes() []byte { return w.buf }

// BeginObject opens an object: a Java bean, or a map with string keys.
func (w *Writer) BeginObject() { w.open(kindObject, '{') }

// BeginIntMap opens a map with number keys, written with bare keys:
// {0:5,1:7}.
func (w *Writer) BeginIntMap() { w.open(kindIntMap, '{') }

// BeginArray opens an array (a Java Set or primitive array: one line in
// the pretty form too).
func (w *Writer) BeginArray() { w.open(kindArray, '[') }

// End closes the innermost open container.
func (w *Writer) End() {
	if len(w.stack) == 0 {
		panic("fastjson: End with nothing open")
	}
	f := w.stack[len(w.stack)-1]
	if f.key {
		panic("fastjson: End after a key without its value")
	}
	w.stack = w.stack[:len(w.stack)-1]
	switch f.kind {
	case kindArray:
		w.buf = append(w.buf, ']')
	default:
		if w.pretty && f.n > 0 {
			w.newLine(w.level())
		}
		w.buf = append(w.buf, '}')
	}
}

// Key writes the key of the next member of an object.
func (w *Writer) Key(k string) {
	f := w.top(kindObject)
	if f.n > 0 {
		w.buf = append(w.buf, ',')
	}
	if w.pretty {
		w.newLine(w.level())
	}
	w.buf = AppendString(w.buf, k)
	w.buf = append(w.buf, ':')
	f.key = true
}

// IntKey writes the bare key of the next entry of a number-keyed map.
func (w *Writer) IntKey(k int64) {
	f := w.top(kindIntMap)
	if f.n > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = strconv.AppendInt(w.buf, k, 10)
	w.buf = append(w.buf, ':')
	f.key = true
}

// String writes a string value.
func (w *Writer) String(s string) {
	w.value()
	w.buf = AppendString(w.buf, s)
}

// Int writes a number value.
func (w *Writer) Int(v int64) {
	w.value()
	w.buf = strconv.AppendInt(w.buf, v, 10)
}

// Bool writes true or false.
func (w *Writer) Bool(v bool) {
	w.value()
	w.buf = strconv.AppendBool(w.buf, v)
}

func (w *Writer) open(k frameKind, c byte) {
	w.value()
	w.buf = append(w.buf, c)
	w.stack = append(w.stack, frame{kind: k})
}

// value accounts for a value about to be written: the value of the
// pending key, or the next array element, or the top-level value.
func (w *Writer) value() {
	if len(w.stack) == 0 {
		return
	}
	f := &w.stack[len(w.stack)-1]
	switch {
	case f.kind == kindArray:
		if f.n > 0 {
			w.buf = append(w.buf, ',')
		}
	case !f.key:
		panic("fastjson: a value in an object needs its key first")
	}
	f.key = false
	f.n++
}

func (w *Writer) top(k frameKind) *frame {
	if len(w.stack) == 0 || w.stack[len(w.stack)-1].kind != k {
		panic("fastjson: key outside of its kind of container")
	}
	f := &w.stack[len(w.stack)-1]
	if f.key {
		panic("fastjson: two keys in a row")
	}
	return f
}

// level is the indentation of the members of the innermost container:
// the open objects and maps (arrays add no level).
func (w *Writer) level() int {
	n := 0
	for _, f := range w.stack {
		if f.kind != kindArray {
			n++
		}
	}
	return n
}

func (w *Writer) newLine(tabs int) {
	w.buf = append(w.buf, '\n')
	for range tabs {
		w.buf = append(w.buf, '\t')
	}
}

const hexDigits = "0123456789ABCDEF"

// AppendString appends s as a JSON string the way fastjson escapes it:
// \" \\ \b \f \n \r \t by name; other control characters, U+007F to
// U+009F, U+2028 and U+2029 as \uXXXX (upper-case hex); everything else,
// '/' and '<' included, as is. Bytes that are not UTF-8 become U+FFFD, as
// they would have on their way into a Java string.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7F {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = appendUnicodeEscape(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
		case r <= 0x9F, r == '\u2028', r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = appendUnicodeEscape(dst, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendUnicodeEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}
