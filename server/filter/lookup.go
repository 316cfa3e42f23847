package filter

import (
	"bytes"
	"math/bits"

	"github.com/rocketstore/rocketstore/message"
)

// ctxSlots is how many properties Match looks up in its one pass over the
// properties; an expression naming more looks the rest up one by one.
const ctxSlots = 16

// propIndex finds an expression's properties (its first ctxSlots names)
// in one pass over a message's encoded properties. It is built at compile
// time and read-only afterwards.
type propIndex struct {
	names []string
	// byFirst[c] has bit i set when names[i] begins with the byte c, so an
	// entry whose first byte starts no name costs one table read.
	byFirst [256]uint16
}

func newPropIndex(names []string) propIndex {
	x := propIndex{names: names[:min(len(names), ctxSlots)]}
	for i, name := range x.names {
		// Names are lexer identifiers: never empty, never a separator.
		x.byFirst[name[0]] |= 1 << i
	}
	return x
}

// lookup sets vals[i] to the value of names[i] in props, and bit i
// of the result when it is there, reading the entries as
// message.ParseProperties does: pieces between PropertySeparators, a name
// before the piece's first NameValueSeparator and a non-empty value after
// it, a later duplicate winning. A name holds no separator, so a piece is
// that name's entry exactly when it begins with the name followed by
// NameValueSeparator and at least one more byte.
func (x *propIndex) lookup(props []byte, vals *[ctxSlots][]byte) (found uint16) {
	for start := 0; start < len(props); {
		end := len(props)
		if i := bytes.IndexByte(props[start:], message.PropertySeparator); i >= 0 {
			end = start + i
		}
		if end > start {
			for m := x.byFirst[props[start]]; m != 0; m &= m - 1 {
				i := bits.TrailingZeros16(m)
				name := x.names[i]
				sep := start + len(name)
				if sep < end-1 && props[sep] == message.NameValueSeparator && string(props[start:sep]) == name {
					vals[i] = props[sep+1 : end]
					found |= 1 << i
					break // the name is fixed by where the separator is
				}
			}
		}
		start = end + 1
	}
	return found
}
