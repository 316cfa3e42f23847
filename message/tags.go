package message

import "unicode/utf16"

// TagsCode returns the ConsumeQueue tags code of a tag (RocketMQ
// MessageExtBrokerInner.tagsString2tagsCode): 0 for an empty tag, otherwise
// Java's String.hashCode of the tag, h = 31*h + c over its UTF-16 code units
// (a character outside the BMP counts as its two surrogates), wrapped to
// int32 and sign-extended.
//
// The tag bytes are decoded as Java's UTF-8 decoder does (new String(bytes,
// UTF_8), checked against OpenJDK 17): each malformed sequence becomes one
// U+FFFD, where a malformed sequence is the longest prefix of a valid
// sequence (so "\xE6\xA0" is one U+FFFD, not two), and an encoded surrogate
// ("\xED\xA0\x80") is one U+FFFD. It does not allocate.
func TagsCode[T string | []byte](tag T) int64 {
	return int64(HashCode(0, tag))
}

// HashCode continues Java's String.hashCode, h = 31*h + c, from h over the
// UTF-16 code units of s, decoded as TagsCode decodes: HashCode(0, s) is
// the hash of s, and HashCode(HashCode(0, a), b) that of a+b when a ends
// where a character ends (in an ASCII byte, say). It does not allocate.
func HashCode[T string | []byte](h int32, s T) int32 {
	i := 0
	// ASCII four characters at a time, h·31⁴ + c0·31³ + c1·31² + c2·31 + c3:
	// the four products do not wait for each other as the steps of
	// h = 31*h + c do. Wrapping int32 arithmetic keeps it equal to Java's.
	for ; i+4 <= len(s) && s[i]|s[i+1]|s[i+2]|s[i+3] < 0x80; i += 4 {
		h = h*(31*31*31*31) + int32(s[i])*(31*31*31) + int32(s[i+1])*(31*31) + int32(s[i+2])*31 + int32(s[i+3])
	}
	for i < len(s) {
		r, n := decodeJavaUTF8(s, i)
		i += n
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
		} else {
			h = 31*h + r
		}
	}
	return h
}

const replacementChar = '\uFFFD'

func isCont(b byte) bool { return b&0xC0 == 0x80 }

// decodeJavaUTF8 decodes the character at s[i] as OpenJDK's
// String.decodeUTF8_UTF16 does and returns it (replacementChar for a
// malformed sequence) with the number of bytes it took.
func decodeJavaUTF8[T string | []byte](s T, i int) (rune, int) {
	n := len(s)
	b1 := s[i]
	switch {
	case b1 < 0x80:
		return rune(b1), 1

	case b1>>5 == 0x6 && b1&0x1E != 0: // C2..DF: 2 bytes
		if i+1 < n {
			b2 := s[i+1]
			if !isCont(b2) {
				return replacementChar, 1
			}
			return rune(b1&0x1F)<<6 | rune(b2&0x3F), 2
		}
		return replacementChar, 1

	case b1>>4 == 0xE: // E0..EF: 3 bytes
		if i+2 < n {
			b2, b3 := s[i+1], s[i+2]
			overlong := b1 == 0xE0 && b2&0xE0 == 0x80
			if overlong || !isCont(b2) {
				return replacementChar, 1
			}
			if !isCont(b3) {
				return replacementChar, 2
			}
			c := rune(b1&0x0F)<<12 | rune(b2&0x3F)<<6 | rune(b3&0x3F)
			if c >= 0xD800 && c <= 0xDFFF { // a surrogate: one U+FFFD for all 3
				return replacementChar, 3
			}
			return c, 3
		}
		if i+1 < n && ((b1 == 0xE0 && s[i+1]&0xE0 == 0x80) || !isCont(s[i+1])) {
			return replacementChar, 1
		}
		return replacementChar, n - i // a truncated sequence ends the input

	case b1>>3 == 0x1E: // F0..F7: 4 bytes
		if i+3 < n {
			b2, b3, b4 := s[i+1], s[i+2], s[i+3]
			uc := rune(b1&0x07)<<18 | rune(b2&0x3F)<<12 | rune(b3&0x3F)<<6 | rune(b4&0x3F)
			if isCont(b2) && isCont(b3) && isCont(b4) && uc >= 0x10000 && uc <= 0x10FFFF {
				return uc, 4
			}
			if b1 > 0xF4 || (b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF)) ||
				(b1 == 0xF4 && b2&0xF0 != 0x80) || !isCont(b2) {
				return replacementChar, 1
			}
			if !isCont(b3) {
				return replacementChar, 2
			}
			return replacementChar, 3
		}
		if b1 > 0xF4 || (i+1 < n && badSecondOf4(b1, s[i+1])) {
			return replacementChar, 1
		}
		if i+2 < n && !isCont(s[i+2]) {
			return replacementChar, 2
		}
		return replacementChar, n - i // a truncated sequence ends the input

	default: // a continuation byte, C0, C1 or F8..FF
		return replacementChar, 1
	}
}

// badSecondOf4 reports whether b2 can't follow b1 in a 4-byte sequence.
func badSecondOf4(b1, b2 byte) bool {
	return (b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF)) ||
		(b1 == 0xF4 && b2&0xF0 != 0x80) || !isCont(b2)
}
