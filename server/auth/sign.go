package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"slices"
	"sync"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// Ext fields of a signed remoting request (RocketMQ's SessionCredentials).
const (
	AccessKeyField     = "AccessKey"
	SignatureField     = "Signature"
	SecurityTokenField = "SecurityToken"
)

// uniqueKeyQueryField is left out of the signed content of requests of
// version V4_9_3 (ordinal 581) and older: those clients added it after
// signing (apache/rocketmq#1216).
const (
	uniqueKeyQueryField = "_UNIQUE_KEY_QUERY"
	versionV4_9_3       = 581
)

// Sign returns the signature of content: base64(HMAC-SHA1(secret,
// content)), as AclSigner.calSignature and the Go client compute it.
func Sign(content []byte, secret string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(content)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignCommand signs a request as the clients' RPC hook does: it sets
// AccessKey, then Signature over the values of every other ext field
// sorted by key, followed by the body. cmd's ext fields must be in its
// ExtFields map (a request being built).
func SignCommand(cmd *remoting.Command, accessKey, secretKey string) {
	cmd.SetExt(AccessKeyField, accessKey)
	delete(cmd.ExtFields, SignatureField)
	var content []byte
	for _, k := range slices.Sorted(mapsKeys(cmd.ExtFields)) {
		content = append(content, cmd.ExtFields[k]...)
	}
	content = append(content, cmd.Body...)
	cmd.SetExt(SignatureField, Sign(content, secretKey))
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// signedFields is a request's ext fields as signed: keys and values
// copied into one buffer, sorted by key. Pooled: a request's check
// allocates nothing once the buffers have grown.
type signedFields struct {
	buf    []byte
	fields []fieldSpan
	out    []byte // the signed values, in key order (writeContent)
	user   []byte // the AccessKey's value (aliases buf)
	sig    []byte // the Signature's value (aliases buf)
	hasAK  bool
}

type fieldSpan struct {
	ks, ke, vs, ve int
	null           bool
	prefix         uint64 // the key's first 8 bytes, big endian, zero-padded: most compares end here
}

// keyPrefix is the sort prefix of a key.
func keyPrefix(k []byte) uint64 {
	var p [8]byte
	copy(p[:], k)
	return binary.BigEndian.Uint64(p[:])
}

// sortFields sorts the fields by key, stably: an insertion sort, as the
// dozen fields of a header need (slices.SortStableFunc's comparator
// calls cost more than the moves), fast when they come sorted.
func (f *signedFields) sortFields() {
	fs := f.fields
	for i := 1; i < len(fs); i++ {
		x := fs[i]
		j := i
		for j > 0 && f.compareFields(fs[j-1], x) > 0 {
			fs[j] = fs[j-1]
			j--
		}
		fs[j] = x
	}
}

// compareFields orders fields by key bytes.
func (f *signedFields) compareFields(a, b fieldSpan) int {
	switch {
	case a.prefix < b.prefix:
		return -1
	case a.prefix > b.prefix:
		return 1
	}
	return bytes.Compare(f.buf[a.ks:a.ke], f.buf[b.ks:b.ke])
}

var signedPool = sync.Pool{New: func() any { return new(signedFields) }}

func (f *signedFields) reset() {
	f.buf, f.fields, f.user, f.sig, f.hasAK = f.buf[:0], f.fields[:0], nil, nil, false
}

// add appends one raw field; a JSON null is kept as a mark that removes
// the key (as decoding into a map does).
func (f *signedFields) add(x remoting.ExtField) {
	ks := len(f.buf)
	f.buf = append(f.buf, x.Key...)
	vs := len(f.buf)
	if !x.Null {
		f.buf = x.AppendValue(f.buf)
	}
	f.fields = append(f.fields, fieldSpan{ks, vs, vs, len(f.buf), x.Null, keyPrefix(x.Key)})
}

// collect reads cmd's ext fields and sorts them by key (byte order, as
// the Go client sorts; Java's TreeMap orders UTF-16 units, the same for
// the ASCII keys of every header). Of a key read twice the last counts,
// as Java's HashMap keeps it; a JSON null value leaves the key out, as the
// broker's header decoding does (Java would sign the text "null"; no
// client sends a null ext value).
func (f *signedFields) collect(cmd *remoting.Command) {
	f.reset()
	if cmd.HasRawExt() {
		cmd.VisitExt(f.add)
	} else {
		for k, v := range cmd.ExtFields {
			ks := len(f.buf)
			f.buf = append(f.buf, k...)
			vs := len(f.buf)
			f.buf = append(f.buf, v...)
			f.fields = append(f.fields, fieldSpan{ks, vs, vs, len(f.buf), false, keyPrefix(f.buf[ks:vs])})
		}
	}
	f.sortFields()
	// Drop all but the last of equal keys.
	out := f.fields[:0]
	for i, fs := range f.fields {
		if i+1 < len(f.fields) && bytes.Equal(f.key(fs), f.key(f.fields[i+1])) {
			continue
		}
		out = append(out, fs)
	}
	f.fields = out
	skipUnique := cmd.Version <= versionV4_9_3
	kept := f.fields[:0]
	for _, fs := range f.fields {
		if fs.null {
			continue
		}
		switch string(f.key(fs)) {
		case SignatureField:
			f.sig = f.value(fs)
			continue
		case AccessKeyField:
			f.user, f.hasAK = f.value(fs), true
		case uniqueKeyQueryField:
			if skipUnique {
				continue
			}
		}
		kept = append(kept, fs)
	}
	f.fields = kept
}

func (f *signedFields) key(fs fieldSpan) []byte   { return f.buf[fs.ks:fs.ke] }
func (f *signedFields) value(fs fieldSpan) []byte { return f.buf[fs.vs:fs.ve] }

// writeContent writes the signed content (the values in key order, then
// body) to h: the values gathered first, so that the hash takes two
// writes, not one per field.
func (f *signedFields) writeContent(h hash.Hash, body []byte) {
	f.out = f.out[:0]
	for _, fs := range f.fields {
		f.out = append(f.out, f.value(fs)...)
	}
	h.Write(f.out)
	h.Write(body)
}

// RemotingContent returns what the sender of cmd signed, the AccessKey and
// the Signature it sent (RocketMQ's DefaultAuthenticationContextBuilder
// for remoting). ok is false when cmd carries no AccessKey. For tests and
// tools; the check itself uses no copy.
func RemotingContent(cmd *remoting.Command) (content []byte, accessKey, signature string, ok bool) {
	f := signedPool.Get().(*signedFields)
	defer signedPool.Put(f)
	f.collect(cmd)
	for _, fs := range f.fields {
		content = append(content, f.value(fs)...)
	}
	content = append(content, cmd.Body...)
	return content, string(f.user), string(f.sig), f.hasAK
}

// Fields are a request's ext fields as the gate read them (sorted by key),
// for the Mapper: Get finds one without reading the header again.
type Fields struct{ f *signedFields }

// ReadFields reads cmd's ext fields as the gate does (for tests and for
// a mapper called outside the gate).
func ReadFields(cmd *remoting.Command) Fields {
	f := new(signedFields)
	f.collect(cmd)
	return Fields{f}
}

// Get returns the value of the ext field key, "" when absent. The string
// is a copy.
func (x Fields) Get(key string) string {
	if x.f == nil {
		return ""
	}
	fs := x.f.fields
	lo, hi := 0, len(fs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(x.f.key(fs[m])) < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(fs) && string(x.f.key(fs[lo])) == key {
		return string(x.f.value(fs[lo]))
	}
	return ""
}
