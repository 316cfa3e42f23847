package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strconv"
	"testing"
)

// referenceJSONHeader decodes a JSON header with encoding/json and the
// same liberal rules as decodeJSONHeader, to check the hand-written reader.
// Keys are taken in order, so duplicate keys act as they do for us.
func referenceJSONHeader(b []byte) (*Command, error) {
	if !json.Valid(b) {
		return nil, errors.New("invalid JSON")
	}
	c := &Command{}
	err := eachMember(b, func(k string, raw json.RawMessage) error {
		var err error
		switch k {
		case "code":
			c.Code, err = refInt(raw)
		case "version":
			c.Version, err = refInt(raw)
		case "opaque":
			var v int
			v, err = refInt(raw)
			c.Opaque = int32(v)
		case "flag":
			var v int
			v, err = refInt(raw)
			c.Flag = int32(v)
		case "language":
			switch {
			case string(raw) == "null":
				c.Language = ""
			case raw[0] == '"':
				err = json.Unmarshal(raw, &c.Language)
			default:
				var v uint64
				v, err = strconv.ParseUint(string(raw), 10, 8)
				c.Language = languageName(byte(v))
			}
		case "remark":
			switch {
			case string(raw) == "null":
				c.Remark = ""
			case raw[0] == '"':
				err = json.Unmarshal(raw, &c.Remark)
			default:
				err = errors.New("remark not a string")
			}
		case "extFields":
			if string(raw) == "null" {
				c.ExtFields = nil
				return nil
			}
			ext := map[string]string{}
			c.ExtFields = ext
			err = eachMember(raw, func(ek string, ev json.RawMessage) error {
				switch {
				case string(ev) == "null":
					delete(ext, ek)
				case ev[0] == '"':
					var s string
					if err := json.Unmarshal(ev, &s); err != nil {
						return err
					}
					ext[ek] = s
				default:
					ext[ek] = string(ev)
				}
				return nil
			})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// eachMember calls f with each member of the JSON object b, in order.
func eachMember(b []byte, f func(string, json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("not an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if err := f(tok.(string), bytes.TrimSpace(raw)); err != nil {
			return err
		}
	}
	return nil
}

func refInt(raw json.RawMessage) (int, error) {
	if string(raw) == "null" {
		return 0, nil
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, err
		}
	}
	v, err := strconv.ParseInt(text, 10, 32)
	return int(v), err
}

// sameCommand compares two decoded commands (a nil and an empty ext map
// are alike).
func sameCommand(a, b *Command) bool {
	return a.Code == b.Code && a.Language == b.Language && a.Version == b.Version &&
		a.Opaque == b.Opaque && a.Flag == b.Flag && a.Remark == b.Remark &&
		maps.Equal(a.ExtFields, b.ExtFields) && bytes.Equal(a.Body, b.Body) &&
		a.SerializeType == b.SerializeType
}

func fuzzSeeds(f *testing.F) {
	add := func(c *Command) {
		b, err := c.AppendFrame(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	send := sendMessageV2Request(64)
	add(send)
	bin := send.Clone()
	bin.SerializeType = SerializeRocketMQ
	add(bin)
	add(NewResponse(TopicNotExist, "No topic route info in name server for the topic: T"))
	f.Add(frameOf(SerializeJSON, []byte(`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`), nil))
	f.Add(frameOf(SerializeJSON, []byte(`{"code":34,"extFields":{"a":1.5e3,"b":true,"z":null,"o":[{}]},"flag":2,"language":9,"opaque":"-5","serializeTypeCurrentRPC":"JSON","version":null}`), []byte("{}")))
	f.Add(frameOf(SerializeJSON, []byte(` { "remark" : "\ud83d\ude00\u0001\"" } `), nil))
	f.Add([]byte{0x06, 0x40, 0x00, 0x00, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 1})
}

// FuzzDecode feeds bytes to Decode and to the FrameReader. Neither may
// panic; what decodes must survive an encode/decode round trip, and the
// JSON header reader must agree with encoding/json.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err == nil {
			roundTrip(t, c)
		}
		if len(b) >= 8 && b[4] == byte(SerializeJSON) {
			hlen := int(binary.BigEndian.Uint32(b[4:]) & maxHeaderLength)
			if hlen <= len(b)-8 {
				checkJSONReference(t, b[8:8+hlen])
			}
		}
		fr := NewFrameReader(bufio.NewReader(bytes.NewReader(b)), 1<<16)
		for {
			c, err := fr.ReadCommand()
			if err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !isCodecError(err) {
					t.Fatalf("unexpected error type: %v", err)
				}
				break
			}
			roundTrip(t, c)
		}
		// The raw bytes as a header of either kind.
		checkJSONReference(t, b)
		var rc Command
		if decodeRocketMQHeader(b, &rc, false) == nil {
			rc.SerializeType = SerializeRocketMQ
			roundTrip(t, &rc)
		}
	})
}

func isCodecError(err error) bool {
	for _, e := range []error{ErrFrameTooLarge, ErrBadFrameLength, ErrBadHeaderLength, ErrBadSerializeType, ErrBadHeader} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func roundTrip(t *testing.T, c *Command) {
	t.Helper()
	frame, err := c.AppendFrame(nil)
	if err != nil {
		if errors.Is(err, ErrEncode) {
			return // e.g. a JSON code too big for the ROCKETMQ header is not re-encodable
		}
		t.Fatalf("encode %v: %v", c, err)
	}
	back, err := Decode(frame)
	if err != nil {
		t.Fatalf("decode of our own frame %q: %v", frame, err)
	}
	if !sameCommand(c, back) {
		t.Fatalf("round trip differs:\n%v\n%v", c, back)
	}
}

// checkJSONReference compares decodeJSONHeader with referenceJSONHeader.
func checkJSONReference(t *testing.T, h []byte) {
	t.Helper()
	var got Command
	err := decodeJSONHeader(h, &got, false, nil)
	want, werr := referenceJSONHeader(h)
	switch {
	case err == nil && werr != nil:
		t.Fatalf("we accept %q, encoding/json says %v", h, werr)
	case err != nil && werr == nil:
		t.Fatalf("we reject %q (%v), encoding/json accepts it as %v", h, err, want)
	case err == nil && !sameCommand(&got, want):
		t.Fatalf("header %q:\nours      %v\nreference %v", h, &got, want)
	}
	if err != nil && !errors.Is(err, ErrBadHeader) {
		t.Fatalf("error %v does not wrap ErrBadHeader", err)
	}
}

// FuzzDecode_RecycledExt: a frame read into a recycled ext map (as the
// server reads the requests of inline processors) decodes exactly as it
// does into a new one, whatever the map held before.
func FuzzDecode_RecycledExt(f *testing.F) {
	fuzzSeeds(f)
	first, err := sendMessageV2Request(16).AppendFrame(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := Decode(b)
		fr := NewFrameReader(bufio.NewReader(bytes.NewReader(append(append([]byte{}, first...), b...))), DefaultMaxFrameSize)
		prev, err := fr.ReadCommand()
		if err != nil {
			t.Fatal(err)
		}
		fr.recycle(prev.ExtFields)
		got, gerr := fr.ReadCommand()
		if werr != nil {
			return // (the reader may still take a frame from the front of b)
		}
		if gerr != nil {
			t.Fatalf("Decode succeeded, the reader failed: %v", gerr)
		}
		if len(want.ExtFields) == 0 && len(got.ExtFields) == 0 {
			want.ExtFields, got.ExtFields = nil, nil
		}
		if !sameCommand(want, got) {
			t.Fatalf("recycled decode differs:\n got %v\nwant %v", got, want)
		}
	})
}

// FuzzDecode_RawExt: a frame read with raw ext fields (as the server reads
// the requests of a RawExt code) gives, through VisitExt and Ext, the same
// fields as Decode's map (which FuzzDecode checks against encoding/json);
// read for a code that is not raw, it decodes as Decode does.
func FuzzDecode_RawExt(f *testing.F) {
	fuzzSeeds(f)
	f.Add(frameOf(SerializeJSON, []byte(`{"extFields":{"a":"1","a":null,"b":"x"},"code":310,"extFields":{"c":"\u0001\u00e9","c":"2"}}`), nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := Decode(b)
		for _, raw := range []bool{true, false} {
			fr := NewFrameReader(bufio.NewReader(bytes.NewReader(b)), DefaultMaxFrameSize)
			fr.rawExt = func(int) bool { return raw }
			if raw {
				fr.transient = func(int) bool { return true } // read in place
			}
			got, gerr := fr.ReadCommand()
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("raw=%v: Decode says %v, the reader %v", raw, werr, gerr)
			}
			if werr != nil {
				continue
			}
			if got.HasRawExt() && (!raw || got.IsResponse() || got.ExtFields != nil) {
				t.Fatalf("raw=%v: raw ext fields kept for %v", raw, got)
			}
			fields := got.ExtFields
			if got.HasRawExt() {
				fields = map[string]string{}
				got.VisitExt(func(f ExtField) {
					if f.Null {
						delete(fields, string(f.Key))
					} else if v := string(f.AppendValue(make([]byte, 0, 1))); v != string(f.Value()) {
						t.Fatalf("field %q: AppendValue %q, Value %q", f.Key, v, f.Value())
					} else {
						n, err := f.Int64()
						wn, werr := strconv.ParseInt(v, 10, 64)
						if n != wn || (err == nil) != (werr == nil) {
							t.Fatalf("field %q=%q: Int64 %d, %v; ParseInt %d, %v", f.Key, v, n, err, wn, werr)
						}
						fields[string(f.Key)] = v
					}
				})
				for k, v := range want.ExtFields {
					if got.Ext(k) != v {
						t.Fatalf("Ext(%q) = %q, want %q", k, got.Ext(k), v)
					}
				}
				if c := got.Clone(); !maps.Equal(c.ExtFields, fields) || c.HasRawExt() {
					t.Fatalf("Clone: %v, want %v", c.ExtFields, fields)
				}
			}
			if len(want.ExtFields) == 0 && len(fields) == 0 {
				want.ExtFields, fields = nil, nil
			}
			cmp := *got
			cmp.ExtFields, cmp.rawExt = fields, nil
			if !sameCommand(want, &cmp) {
				t.Fatalf("raw=%v: decode differs:\n got %v\nwant %v", raw, &cmp, want)
			}
			fr.release()
		}
	})
}
