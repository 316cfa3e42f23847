package store

import (
	"strings"

	"github.com/rocketstore/rocketstore/message"
)

// appendPropertiesExcept appends to dst the entries of the encoded
// properties props whose names are not in drop, and sets vals[i] to the
// value of drop[i] if props has it (the last one, as ParseProperties
// reads). Entries that ParseProperties would drop are dropped. It is a
// copy of the properties string without a map, for the timer's hot paths.
func appendPropertiesExcept(dst []byte, props string, drop []string, vals []string) []byte {
	for start := 0; start < len(props); {
		end := strings.IndexByte(props[start:], message.PropertySeparator)
		if end < 0 {
			end = len(props)
		} else {
			end += start
		}
		piece := props[start:end]
		start = end + 1
		sep := strings.IndexByte(piece, message.NameValueSeparator)
		if sep <= 0 || sep >= len(piece)-1 {
			continue
		}
		name, kept := piece[:sep], true
		for i, d := range drop {
			if name == d {
				vals[i], kept = piece[sep+1:], false
			}
		}
		if kept {
			dst = append(dst, piece...)
			dst = append(dst, message.PropertySeparator)
		}
	}
	return dst
}
