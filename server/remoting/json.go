package remoting

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rocketstore/rocketstore/internal/fastjson"
)

// The JSON header is written and read by hand: it is on the path of every
// message sent and pulled, and reflection-based encoding/json costs several
// times more. The fuzz tests check the reader against encoding/json.

// appendJSONHeader appends c's header as one compact JSON object, keys in
// the order fastjson writes them (sorted), ext values always JSON strings,
// remark and extFields always present (the Go client expects an object),
// language omitted when empty.
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"extFields":{`...)
	first := true
	for k, v := range c.ExtFields {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = fastjson.AppendString(dst, k)
		dst = append(dst, ':')
		dst = fastjson.AppendString(dst, v)
	}
	for i := 0; i+1 < len(c.ExtList); i += 2 {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = fastjson.AppendString(dst, c.ExtList[i])
		dst = append(dst, ':')
		dst = fastjson.AppendString(dst, c.ExtList[i+1])
	}
	dst = append(dst, `},"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	if c.Language != "" { // Java omits a null language and reads it as JAVA
		dst = append(dst, `,"language":`...)
		dst = fastjson.AppendString(dst, c.Language)
	}
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"remark":`...)
	dst = fastjson.AppendString(dst, c.Remark)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	return append(dst, '}')
}

// maxJSONDepth bounds nesting in skipped values, as encoding/json does.
const maxJSONDepth = 10000

// jsonReader reads one JSON header. Its methods return errors that wrap
// ErrBadHeader and name the byte offset.
type jsonReader struct {
	b []byte
	s string // a copy of b, made at the first need: strings without escapes are cut from it
	i int
}

func (d *jsonReader) errorf(format string, args ...any) error {
	return fmt.Errorf("remoting: JSON header at byte %d: %s: %w", d.i, fmt.Sprintf(format, args...), ErrBadHeader)
}

func (d *jsonReader) skipSpace() {
	if d.i < len(d.b) && d.b[d.i] > ' ' { // compact JSON: no space at all
		return
	}
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (d *jsonReader) peek() byte {
	d.skipSpace()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *jsonReader) expect(c byte) error {
	if d.peek() != c {
		return d.errorf("want %q", c)
	}
	d.i++
	return nil
}

// decodeJSONHeader reads a JSON header into c. It reads liberally, like
// fastjson in a Java broker: unknown keys are skipped; ext values may be
// strings, numbers, booleans (kept as their text), null (dropped) or even
// objects and arrays (kept as raw JSON); integer fields may be numbers,
// numeric strings or null; language may be a name or a LanguageCode number.
//
// With rawExt the ext object is checked but not decoded: c.rawExt is its
// text (nil when absent or null), for VisitExt or materializeExt.
// With spans (and rawExt) the ext members are also listed in *spans (from
// its start), for VisitExt not to parse them again.
func decodeJSONHeader(b []byte, c *Command, rawExt bool, spans *[]extMember) error {
	d := jsonReader{b: b}
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return d.end()
	}
	for {
		if d.peek() != '"' {
			return d.errorf("want a key")
		}
		key, err := d.readStringBytes()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.skipSpace()
		switch string(key) {
		case "code":
			c.Code, err = d.readInt()
		case "version":
			c.Version, err = d.readInt()
		case "opaque":
			var v int
			v, err = d.readInt()
			c.Opaque = int32(v)
		case "flag":
			var v int
			v, err = d.readInt()
			c.Flag = int32(v)
		case "language":
			c.Language, err = d.readLanguage()
		case "remark":
			c.Remark, err = d.readStringOrNull()
		case "extFields":
			if rawExt {
				c.rawExt, err = d.extText(spans)
			} else {
				clear(c.ExtFields) // a repeated extFields replaces the first, as in encoding/json
				c.ExtFields, err = d.readExtFields(c.ExtFields)
			}
		default:
			err = d.skipValue(1)
		}
		if err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return d.end()
		default:
			return d.errorf("want ',' or '}'")
		}
	}
}

func (d *jsonReader) end() error {
	d.skipSpace()
	if d.i != len(d.b) {
		return d.errorf("data after the header object")
	}
	return nil
}

// readInt reads an int32 given as a number, a numeric string or null (0).
func (d *jsonReader) readInt() (int, error) {
	start := d.i
	var text []byte
	switch {
	case d.i < len(d.b) && d.b[d.i] == '"':
		s, err := d.readStringBytes()
		if err != nil {
			return 0, err
		}
		text = s
	case d.literal("null"):
		return 0, nil
	default:
		n, err := d.readNumber()
		if err != nil {
			return 0, err
		}
		text = n
	}
	if v, ok := parseDecimal(text, 32); ok {
		return int(v), nil
	}
	v, err := strconv.ParseInt(string(text), 10, 32)
	if err != nil {
		d.i = start
		return 0, d.errorf("want a 32-bit integer, have %.40q", text)
	}
	return int(v), nil
}

// parseDecimal parses the usual integer text, digits after an optional
// '-', as strconv.ParseInt(b, 10, bits) does; ok is false for anything
// else (a '+', too many digits, out of range), for strconv to decide.
func parseDecimal(b []byte, bits int) (n int64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if bits < 64 { // (18 digits always fit 64 bits)
		if lim := int64(1) << (bits - 1); n < -lim || n > lim-1 {
			return 0, false
		}
	}
	return n, true
}

func (d *jsonReader) readLanguage() (string, error) {
	switch {
	case d.i < len(d.b) && d.b[d.i] == '"':
		start := d.i
		b, err := d.readStringBytes()
		if err != nil {
			return "", err
		}
		for _, n := range languages { // the usual names cost no string
			if n == string(b) {
				return n, nil
			}
		}
		return d.cut(start, b), nil
	case d.literal("null"):
		return "", nil
	}
	start := d.i
	n, err := d.readNumber()
	if err != nil {
		return "", err
	}
	v, err := strconv.ParseUint(string(n), 10, 8)
	if err != nil {
		d.i = start
		return "", d.errorf("want a language name or code, have %.40q", n)
	}
	return languageName(byte(v)), nil
}

func (d *jsonReader) readStringOrNull() (string, error) {
	if d.literal("null") {
		return "", nil
	}
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", d.errorf("want a string")
	}
	return d.readString()
}

// extKind is what an ext value is.
type extKind uint8

const (
	extString extKind = iota // a JSON string: the span is its inside
	extNull                  // null: the key reads as absent
	extText                  // a number, boolean, object or array: the span is its JSON text
)

// extSpan is where a key or value of an ext member lies in the header.
type extSpan struct {
	start, end int
	escaped    bool // a string that needs unquoting (escapes, or bytes to check as UTF-8)
}

// eachExt reads the ext object at d.i (after white space) and calls f, when
// not nil, with each member in order. It checks the object's syntax as
// encoding/json does.
func (d *jsonReader) eachExt(f func(key, val extSpan, kind extKind)) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.errorf("want a key")
		}
		kstart := d.i
		kesc, err := d.scanString()
		if err != nil {
			return err
		}
		key := extSpan{start: kstart + 1, end: d.i - 1, escaped: kesc}
		if err := d.expect(':'); err != nil {
			return err
		}
		d.skipSpace()
		if d.i >= len(d.b) {
			return d.errorf("want a value")
		}
		vstart := d.i
		var val extSpan
		kind := extText
		switch {
		case d.b[d.i] == '"':
			vesc, err := d.scanString()
			if err != nil {
				return err
			}
			val, kind = extSpan{start: vstart + 1, end: d.i - 1, escaped: vesc}, extString
		case d.literal("null"):
			kind = extNull // Java keeps a null, which reads as absent
		default:
			if err := d.skipValue(2); err != nil {
				return err
			}
			val = extSpan{start: vstart, end: d.i}
		}
		if f != nil {
			f(key, val, kind)
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.errorf("want ',' or '}'")
		}
	}
}

// str returns the value of a string span: a substring of d.s when it needs
// no unquoting, else a new string.
func (d *jsonReader) str(sp extSpan) string {
	if sp.escaped {
		if u := unquote(d.b[sp.start:sp.end]); &u[0] != &d.b[sp.start] {
			return string(u)
		}
	}
	if sp.start == sp.end {
		return ""
	}
	return d.str0()[sp.start:sp.end]
}

// str0 returns d.s, the header as a string, making it at the first need.
func (d *jsonReader) str0() string {
	if d.s == "" {
		d.s = string(d.b)
	}
	return d.s
}

// readExtFields reads the ext object into dst (which is empty), or a new
// map when dst is nil.
func (d *jsonReader) readExtFields(dst map[string]string) (map[string]string, error) {
	if d.literal("null") {
		return nil, nil
	}
	// Gather the pairs first so the map is made at its final size.
	type pair struct {
		k, v string
		del  bool // a null value: drop the key
	}
	var stack [24]pair
	pairs := stack[:0]
	err := d.eachExt(func(k, v extSpan, kind extKind) {
		key, ok := "", false
		if !k.escaped {
			key, ok = knownKeys[string(d.b[k.start:k.end])]
		}
		if !ok {
			key = d.str(k)
		}
		p := pair{k: key, del: kind == extNull}
		if kind != extNull {
			p.v = d.str(v)
		}
		pairs = append(pairs, p)
	})
	if err != nil {
		return nil, err
	}
	m := dst
	if m == nil {
		m = make(map[string]string, len(pairs))
	}
	for _, p := range pairs {
		if p.del {
			delete(m, p.k)
		} else {
			m[p.k] = p.v
		}
	}
	return m, nil
}

// literal consumes lit if it comes next.
func (d *jsonReader) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// readNumber consumes a JSON number and returns its text.
func (d *jsonReader) readNumber() ([]byte, error) {
	start := d.i
	b := d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, d.errorf("want a value")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, d.errorf("bad number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, d.errorf("bad number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return b[start:i], nil
}

// skipValue consumes any JSON value, checking its syntax. depth is the
// number of containers around the value.
func (d *jsonReader) skipValue(depth int) error {
	d.skipSpace()
	if d.i >= len(d.b) {
		return d.errorf("want a value")
	}
	switch d.b[d.i] {
	case '"':
		_, err := d.scanString()
		return err
	case '{', '[':
		if depth+1 > maxJSONDepth {
			return d.errorf("nested too deep")
		}
		open := d.b[d.i]
		closeWith := byte('}')
		if open == '[' {
			closeWith = ']'
		}
		d.i++
		if d.peek() == closeWith {
			d.i++
			return nil
		}
		for {
			if open == '{' {
				if d.peek() != '"' {
					return d.errorf("want a key")
				}
				if _, err := d.scanString(); err != nil {
					return err
				}
				if err := d.expect(':'); err != nil {
					return err
				}
			}
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.i++
			case closeWith:
				d.i++
				return nil
			default:
				return d.errorf("want ',' or %q", closeWith)
			}
		}
	case 't':
		if d.literal("true") {
			return nil
		}
	case 'f':
		if d.literal("false") {
			return nil
		}
	case 'n':
		if d.literal("null") {
			return nil
		}
	default:
		_, err := d.readNumber()
		return err
	}
	return d.errorf("want a value")
}

// scanString consumes a string at d.i and reports whether it needs
// unescaping (escapes or non-ASCII bytes). Raw control characters are
// errors, as in every JSON parser.
func (d *jsonReader) scanString() (complex bool, err error) {
	b := d.b
	i := d.i + 1
	for i < len(b) {
		for i < len(b) && plainStringByte[b[i]] { // the usual bytes, in one test each
			i++
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			return complex, nil
		case c == '\\':
			complex = true
			if i+1 >= len(b) {
				return false, d.errorf("unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					d.i = i
					return false, d.errorf("bad \\u escape")
				}
				i += 6
			default:
				d.i = i
				return false, d.errorf("bad escape")
			}
		case c < 0x20:
			d.i = i
			return false, d.errorf("control character in string")
		default:
			if c >= utf8.RuneSelf {
				complex = true
			}
			i++
		}
	}
	return false, d.errorf("unterminated string")
}

// plainStringByte tells the bytes a JSON string holds as they are: ASCII,
// not a control character, quote or backslash.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// readStringBytes consumes a string and returns its value. Without escapes
// and with valid UTF-8 the result aliases the header; otherwise it is new.
func (d *jsonReader) readStringBytes() ([]byte, error) {
	start := d.i
	complex, err := d.scanString()
	if err != nil {
		return nil, err
	}
	raw := d.b[start+1 : d.i-1]
	if !complex {
		return raw, nil
	}
	return unquote(raw), nil
}

// readString is readStringBytes as a string, cut from d.s when it needs
// no unescaping.
func (d *jsonReader) readString() (string, error) {
	start := d.i
	b, err := d.readStringBytes()
	if err != nil {
		return "", err
	}
	return d.cut(start, b), nil
}

// cut returns the value b of the string that starts at byte start: a
// substring of d.s when b is the raw text, else a new string.
func (d *jsonReader) cut(start int, b []byte) string {
	raw := d.b[start+1 : d.i-1]
	if len(b) == len(raw) && (len(b) == 0 || &b[0] == &raw[0]) { // b is raw
		if len(b) == 0 {
			return ""
		}
		return d.str0()[start+1 : d.i-1]
	}
	return string(b)
}

// unquote decodes the inside of a scanned JSON string as encoding/json
// does: escapes resolved, invalid UTF-8 and unpaired surrogates become
// U+FFFD.
func unquote(raw []byte) []byte {
	if !hasBackslash(raw) && utf8.Valid(raw) {
		return raw
	}
	return appendUnquoted(make([]byte, 0, len(raw)+8), raw)
}

// appendUnquoted appends the decoded inside of a scanned JSON string to
// out.
func appendUnquoted(out, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(raw[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(raw[i+2:i+6])); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default: // '"', '\\', '/'
				out = append(out, raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, raw[i:i+size]...)
			}
			i += size
		}
	}
	return out
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// knownKeys interns the ext field names of the requests the broker and
// name server see most, so decoding them allocates no key strings. It is
// read-only.
var knownKeys = func() map[string]string {
	names := []string{
		// SendMessageRequestHeader and its V2 short form
		"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
		"sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
		"maxReconsumeTimes", "batch", "bname", "brokerName",
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n",
		// pull, offsets, send-back, transactions
		"consumerGroup", "queueOffset", "maxMsgNums", "commitOffset", "suspendTimeoutMillis",
		"subscription", "subVersion", "expressionType", "offset", "timestamp", "group",
		"delayLevel", "originMsgId", "originTopic", "commitLogOffset", "msgId",
		"transactionId", "tranStateTableOffset", "commitOrRollback", "fromTransactionCheck",
		"clientID", "clientId", "nextBeginOffset", "minOffset", "maxOffset",
		"suggestWhichBrokerId", "MSG_REGION", "TRACE_ON", "lo", "committed",
		// name server
		"clusterName", "brokerAddr", "brokerId", "haServerAddr", "heartbeatTimeoutMillis",
		"enableActingMaster", "compressed", "bodyCrc32", "zoneName", "masterAddr",
		"namespace", "key", "value", "acceptStandardJsonOnly",
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()
