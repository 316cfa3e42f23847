package message

import (
	"iter"
	"maps"
	"slices"
	"strings"
	"unsafe"
)

// Separators of the encoded properties string (RocketMQ MessageDecoder
// NAME_VALUE_SEPARATOR and PROPERTY_SEPARATOR). Each entry is
// name·NameValueSeparator·value·PropertySeparator, the last separator kept.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// EncodeProperties encodes p as a properties string, entries sorted by name
// so the result is deterministic (RocketMQ writes HashMap order, which
// readers must not depend on). It skips entries that would not read back
// the same: an empty name or value, a name holding either separator, or a
// value holding PropertySeparator.
func EncodeProperties(p map[string]string) string {
	names := slices.Sorted(maps.Keys(p))
	n := 0
	for _, k := range names {
		n += len(k) + len(p[k]) + 2
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, k := range names {
		v := p[k]
		if k == "" || v == "" || strings.ContainsAny(k, "\x01\x02") || strings.IndexByte(v, PropertySeparator) >= 0 {
			continue
		}
		sb.WriteString(k)
		sb.WriteByte(NameValueSeparator)
		sb.WriteString(v)
		sb.WriteByte(PropertySeparator)
	}
	return sb.String()
}

// AppendProperty appends one entry, name·0x01·value·0x02, to dst and returns
// the extended slice. It does not check name or value; see EncodeProperties
// for what reads back.
func AppendProperty(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}

// ParseProperties decodes a properties string as RocketMQ's
// string2messageProperties does: it splits s on 0x02 and keeps the pieces
// with a non-empty name before the first 0x01 and a non-empty value after
// it (the value may hold more 0x01 bytes). Other pieces are dropped, and a
// later duplicate name wins.
func ParseProperties(s string) map[string]string {
	m := make(map[string]string)
	for name, value := range entries(s) {
		m[name] = value
	}
	return m
}

// LookupProperty returns the value of the property name in the encoded
// properties props (a string or a Record's Properties()), reading them as
// ParseProperties does: a later duplicate wins. The value aliases props.
// It does not allocate.
func LookupProperty[T string | []byte](props T, name string) (T, bool) {
	var (
		found T
		ok    bool
	)
	for k, v := range entries(props) {
		if equal(k, name) {
			found, ok = v, true
		}
	}
	return found, ok
}

// LookupProperties finds several properties in one pass over props: for
// each i it sets vals[i] to the value of names[i], the last one as
// LookupProperty does, and bit i of the result when names[i] is there. It
// takes at most 64 names and does not allocate.
func LookupProperties[T string | []byte](props T, names []string, vals []T) (found uint64) {
	names = names[:min(len(names), len(vals), 64)]
	// The loop of entries, written out: this runs for every dispatched record.
	for start := 0; start < len(props); {
		end := indexByteFrom(props, start, PropertySeparator)
		if end < 0 {
			end = len(props)
		}
		sep := indexByteFrom(props[:end], start, NameValueSeparator)
		if sep > start && sep < end-1 {
			k := props[start:sep]
			for i, name := range names {
				if len(k) == len(name) && equal(k, name) {
					vals[i] = props[sep+1 : end]
					found |= 1 << i
				}
			}
		}
		start = end + 1
	}
	return found
}

// entries yields the valid name/value pairs of an encoded properties string
// in order; see ParseProperties.
func entries[T string | []byte](s T) iter.Seq2[T, T] {
	return func(yield func(T, T) bool) {
		for start := 0; start < len(s); {
			end := indexByteFrom(s, start, PropertySeparator)
			if end < 0 {
				end = len(s)
			}
			// RocketMQ searches for 0x01 from the piece's start and accepts it
			// only inside the piece, after at least one name byte and before
			// at least one value byte.
			sep := indexByteFrom(s[:end], start, NameValueSeparator)
			if sep > start && sep < end-1 {
				if !yield(s[start:sep], s[sep+1:end]) {
					return
				}
			}
			start = end + 1
		}
	}
}

// Keys yields the non-empty tokens of a KEYS property value separated by
// PropertyKeySeparator, as the IndexFile builder splits them. The tokens
// alias keys. Ranging over it does not allocate.
func Keys[T string | []byte](keys T) iter.Seq[T] {
	return func(yield func(T) bool) {
		for i := 0; i < len(keys); {
			j := indexByteFrom(keys, i, PropertyKeySeparator[0])
			if j < 0 {
				j = len(keys)
			}
			if j > i && !yield(keys[i:j]) {
				return
			}
			i = j + 1
		}
	}
}

// indexByteFrom returns the index of the first c in s at or after from, or -1.
func indexByteFrom[T string | []byte](s T, from int, c byte) int {
	if i := strings.IndexByte(view(s)[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// view is s as a string, without copying: a slice header begins as a
// string header does. The string must not outlive s's bytes.
func view[T string | []byte](s T) string { return *(*string)(unsafe.Pointer(&s)) }

// equal reports whether a holds the bytes of b, without converting a.
func equal[T string | []byte](a T, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
