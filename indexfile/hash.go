package indexfile

import (
	"math"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rocketstore/rocketstore/message"
)

// KeyHash returns the index hash of topic and key: the Java String.hashCode
// of "topic#key", made non-negative as IndexFile.indexKeyHashMethod does
// (Math.abs, with MinInt32 becoming 0). It does not allocate.
func KeyHash(topic, key string) int32 {
	return keyHashFrom(topicHash(topic), topic, key)
}

// topicHash is the Java hash of topic + "#", from which the hash of each
// "topic#key" continues.
func topicHash(topic string) int32 {
	return 31*int32(message.TagsCode(topic)) + '#'
}

// keyHashFrom finishes KeyHash(topic, key) given th = topicHash(topic).
func keyHashFrom(th int32, topic, key string) int32 {
	var h int32
	if utf8.ValidString(key) {
		h = hashFrom(th, key)
	} else {
		// Java decodes a malformed sequence to U+FFFD in its own way; let
		// message.TagsCode, which knows that way, hash the whole key. An
		// ASCII byte always ends a malformed sequence, so hashing
		// "topic#key" as one string equals hashing the parts one by one.
		var buf [256]byte
		b := append(append(append(buf[:0], topic...), '#'), key...)
		h = int32(message.TagsCode(b))
	}
	return positive(h)
}

// hashFrom continues Java's String.hashCode h = 31*h + c over the UTF-16
// code units c of s, which must be valid UTF-8: a character outside the
// Basic Multilingual Plane counts as its two surrogates.
func hashFrom(h int32, s string) int32 {
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// positive is IndexFile.indexKeyHashMethod's Math.abs: MinInt32 has no
// positive counterpart and becomes 0.
func positive(h int32) int32 {
	switch {
	case h == math.MinInt32:
		return 0
	case h < 0:
		return -h
	}
	return h
}
