package remoting

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// SerializeType says how a frame's header is encoded: the top byte of the
// frame's second int32 (RocketMQ's SerializeType).
type SerializeType byte

const (
	// SerializeJSON is a JSON object header. The Go client always sends it.
	SerializeJSON SerializeType = 0
	// SerializeRocketMQ is RocketMQ's binary header (RocketMQSerializable).
	SerializeRocketMQ SerializeType = 1
)

// String returns "JSON" or "ROCKETMQ", the names of Java's SerializeType.
func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return fmt.Sprintf("SerializeType(%d)", byte(t))
}

// Flag bits of Command.Flag (RemotingCommand RPC_TYPE and RPC_ONEWAY).
const (
	FlagResponse int32 = 1 << 0 // the command answers a request
	FlagOneway   int32 = 1 << 1 // the request wants no answer
)

// DefaultVersion is the Version of commands made by NewRequest and
// NewResponse: MQVersion V4_9_4 (ordinal 401). It tells Java peers we speak
// the 4.9 protocol; we implement none of 5.x's additions (POP, static topics).
const DefaultVersion = 401

// DefaultLanguage is the Language of commands made by NewRequest and
// NewResponse: what a Java broker or name server sends.
const DefaultLanguage = "JAVA"

// languages maps RocketMQ's LanguageCode byte (the ROCKETMQ header) to the
// enum name (the JSON header). Index = code.
var languages = [...]string{
	"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER",
	"HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS",
}

// languageCode is the LanguageCode byte of a language name; names it does
// not know become OTHER (7).
func languageCode(name string) byte {
	for i, n := range languages {
		if n == name {
			return byte(i)
		}
	}
	if name == "" {
		return 0 // JAVA, Java's default
	}
	return 7
}

// languageName is the name of a LanguageCode byte; unknown bytes become
// "OTHER".
func languageName(code byte) string {
	if int(code) < len(languages) {
		return languages[code]
	}
	return "OTHER"
}

// Command is RocketMQ's RemotingCommand: one request or response.
//
// A decoded Command owns its fields; Body may alias the frame buffer it was
// read into, which nothing else uses. Commands are not safe for concurrent
// mutation.
type Command struct {
	// Code is a request code (SendMessage, ...) in a request and a response
	// code (Success, ...) in a response. Java's int; the ROCKETMQ header
	// holds only int16.
	Code int
	// Language is the sender's LanguageCode name: "JAVA", "GO", "CPP", ...
	Language string
	// Version is the sender's MQVersion ordinal (the Go client sends 317).
	Version int
	// Opaque matches a response to its request on one connection.
	Opaque int32
	// Flag holds FlagResponse and FlagOneway.
	Flag int32
	// Remark is free text, usually an error message.
	Remark string
	// ExtFields are the custom header fields. Values are always strings on
	// the wire we write; numbers and booleans read from JSON are kept as
	// their JSON text.
	ExtFields map[string]string
	// ExtList, when not nil, holds more ext fields to write, after
	// ExtFields's, as names and values in turn: name, value, name,
	// value... Its names must not be in ExtFields. A response built for
	// every message uses it instead of a map: no hashing, one allocation
	// with the command. Decoding never sets it.
	ExtList []string
	// Body is the payload after the header.
	Body []byte
	// BodyParts, when not nil, is the body instead of Body (which must be
	// nil): slices written one after another without being copied, such
	// as records in a mapped CommitLog file (a zero-copy pull). They must
	// stay valid until Release is called.
	BodyParts [][]byte
	// Release, when not nil, is called once the frame has been written or
	// dropped (the connection closed, or the request was oneway), and
	// never again: it gives back what BodyParts alias. Clone and Decode
	// never set it.
	Release func()
	// SerializeType is the header encoding the command was read with, and
	// the one it is written with.
	SerializeType SerializeType

	// rawExt, when not nil, holds the ext fields as read and not decoded
	// (a request of a code registered with RawExt): the JSON object's text
	// or the ROCKETMQ ext block. ExtFields is nil then.
	rawExt []byte
	// lent marks a request read in place (a Transient code): Body and
	// rawExt alias the connection's read buffer until its processor
	// returns.
	lent bool
	// spans, when not nil, lists the members of a raw JSON ext object
	// (the frame reader's, valid while lent).
	spans []extMember
}

// NewRequest returns a request with DefaultLanguage and DefaultVersion. ext
// becomes ExtFields as is (not copied); the opaque is assigned when the
// request is sent.
func NewRequest(code int, ext map[string]string, body []byte) *Command {
	return &Command{
		Code:      code,
		Language:  DefaultLanguage,
		Version:   DefaultVersion,
		ExtFields: ext,
		Body:      body,
	}
}

// NewResponse returns a response with the given code and remark. The
// server fills in the opaque of the request it answers.
func NewResponse(code int, remark string) *Command {
	return &Command{
		Code:     code,
		Language: DefaultLanguage,
		Version:  DefaultVersion,
		Flag:     FlagResponse,
		Remark:   remark,
	}
}

// bodyLen is the length of the body, Body or BodyParts.
func (c *Command) bodyLen() int {
	if c.BodyParts == nil {
		return len(c.Body)
	}
	n := 0
	for _, p := range c.BodyParts {
		n += len(p)
	}
	return n
}

// body returns the body as one slice, joining BodyParts into a new one.
func (c *Command) body() []byte {
	if c.BodyParts == nil {
		return c.Body
	}
	b := make([]byte, 0, c.bodyLen())
	for _, p := range c.BodyParts {
		b = append(b, p...)
	}
	return b
}

// release calls Release once.
func (c *Command) release() {
	if r := c.Release; r != nil {
		c.Release = nil
		r()
	}
}

// IsResponse reports whether the response flag bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag bit is set. The Go client never
// sets it, even for calls it treats as oneway.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Ext returns ExtFields[key], or "" when absent; of a command read with
// raw ext fields, the field called key.
func (c *Command) Ext(key string) string {
	for i := len(c.ExtList) - 2; i >= 0; i -= 2 {
		if c.ExtList[i] == key {
			return c.ExtList[i+1]
		}
	}
	if c.rawExt != nil {
		v, _ := c.extLookup(key)
		return v
	}
	return c.ExtFields[key]
}

// SetExt sets ExtFields[key] = value, making the map when needed (and
// decoding raw ext fields into it).
func (c *Command) SetExt(key, value string) {
	if c.rawExt != nil {
		c.ExtFields, c.rawExt, c.spans = c.rawExtMap(), nil, nil
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	for i := 0; i+1 < len(c.ExtList); i += 2 { // into the map, so that key is set once
		c.ExtFields[c.ExtList[i]] = c.ExtList[i+1]
	}
	c.ExtList = nil
	c.ExtFields[key] = value
}

// detach copies what c's Body and rawExt alias, for a request read in
// place that must outlive its loan.
func (c *Command) detach() {
	if c.lent {
		c.Body = bytes.Clone(c.Body)
		c.rawExt = bytes.Clone(c.rawExt)
		c.lent, c.spans = false, nil
	}
}

// forgetLoan drops what c's Body and rawExt alias, for a request read in
// place whose processor deferred it: the read buffer is read over next.
func (c *Command) forgetLoan() {
	if c.lent {
		c.Body, c.rawExt, c.lent, c.spans = nil, nil, false, nil
	}
}

// Clone returns a deep copy of c (raw ext fields decoded into ExtFields).
func (c *Command) Clone() *Command {
	d := *c
	if c.rawExt != nil {
		d.ExtFields, d.rawExt = c.rawExtMap(), nil
	} else if c.ExtFields != nil {
		d.ExtFields = maps.Clone(c.ExtFields)
	}
	if c.ExtList != nil {
		d.ExtList = slices.Clone(c.ExtList)
	}
	if c.Body != nil {
		d.Body = append([]byte(nil), c.Body...)
	}
	if c.BodyParts != nil {
		d.Body, d.BodyParts = c.body(), nil
	}
	d.Release, d.lent, d.spans = nil, false, nil
	return &d
}

// String describes c for logs: code, flag, opaque, remark, ext fields and
// body length (not the body).
func (c *Command) String() string {
	var b strings.Builder
	kind := "request"
	if c.IsResponse() {
		kind = "response"
	}
	fmt.Fprintf(&b, "%s{code=%d opaque=%d flag=%d lang=%s ver=%d", kind, c.Code, c.Opaque, c.Flag, c.Language, c.Version)
	if c.Remark != "" {
		fmt.Fprintf(&b, " remark=%q", c.Remark)
	}
	ext := c.ExtFields
	if c.rawExt != nil {
		ext = c.rawExtMap()
	}
	if len(ext) > 0 {
		fmt.Fprintf(&b, " ext=%v", ext)
	}
	if len(c.ExtList) > 0 {
		fmt.Fprintf(&b, " extList=%q", c.ExtList)
	}
	fmt.Fprintf(&b, " body=%dB}", c.bodyLen())
	return b.String()
}
