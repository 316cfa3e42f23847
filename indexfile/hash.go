package indexfile

import (
	"math"

	"github.com/rocketstore/rocketstore/message"
)

// KeyHash returns the index hash of topic and key: the Java String.hashCode
// of "topic#key", made non-negative as IndexFile.indexKeyHashMethod does
// (Math.abs, with MinInt32 becoming 0). It does not allocate.
func KeyHash(topic, key string) int32 {
	return keyHashFrom(topicHash(topic), key)
}

// topicHash is the Java hash of topic + "#", from which the hash of each
// "topic#key" continues.
func topicHash(topic string) int32 {
	return 31*message.HashCode(0, topic) + '#'
}

// keyHashFrom finishes KeyHash(topic, key) given th = topicHash(topic).
// Java decodes "topic#key" as one string; an ASCII byte always ends a
// malformed sequence, so hashing the parts one after the other is the same.
func keyHashFrom(th int32, key string) int32 {
	return positive(message.HashCode(th, key))
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
