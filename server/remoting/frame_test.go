package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// frameOf builds a frame by hand: length, type and header length, header,
// body.
func frameOf(st SerializeType, header, body []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(4+len(header)+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(st)<<24|uint32(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

func TestCommand_AppendFrame_JSONLayout(t *testing.T) {
	c := &Command{
		Code: 105, Language: "GO", Version: 317, Opaque: 7,
		Remark:    "no route\x01",
		ExtFields: map[string]string{"topic": "T\"1"},
		Body:      []byte("hi"),
	}
	got, err := c.AppendFrame(nil)
	require.NoError(t, err)

	header := `{"code":105,"extFields":{"topic":"T\"1"},"flag":0,"language":"GO","opaque":7,"remark":"no route\u0001","version":317}`
	want := []byte{0, 0, 0, byte(4 + len(header) + 2), 0, 0, 0, byte(len(header))}
	want = append(want, header...)
	want = append(want, 'h', 'i')
	require.Equal(t, string(want), string(got))

	back, err := Decode(got)
	require.NoError(t, err)
	require.Equal(t, c, back)
}

func TestCommand_AppendFrame_RocketMQLayout(t *testing.T) {
	c := &Command{
		Code: 10, Language: "JAVA", Version: 401, Opaque: 0x01020304, Flag: FlagResponse,
		Remark: "ok", ExtFields: map[string]string{"k": "vv"}, Body: []byte{0xFF},
		SerializeType: SerializeRocketMQ,
	}
	got, err := c.AppendFrame(nil)
	require.NoError(t, err)

	header := []byte{
		0x00, 0x0A, // code 10
		0x00,       // JAVA
		0x01, 0x91, // version 401
		0x01, 0x02, 0x03, 0x04, // opaque
		0x00, 0x00, 0x00, 0x01, // flag: response
		0x00, 0x00, 0x00, 0x02, 'o', 'k', // remark
		0x00, 0x00, 0x00, 0x09, // ext length: 2+1+4+2
		0x00, 0x01, 'k', 0x00, 0x00, 0x00, 0x02, 'v', 'v',
	}
	want := []byte{0, 0, 0, byte(4 + len(header) + 1), 1, 0, 0, byte(len(header))}
	want = append(want, header...)
	want = append(want, 0xFF)
	require.Equal(t, want, got)

	back, err := Decode(got)
	require.NoError(t, err)
	require.Equal(t, c, back)
}

// TestDecode_GoClientFrame decodes the bytes the official Go client writes
// for GET_ROUTEINFO_BY_TOPIC: jsoniter marshals its RemotingCommand struct
// in field order, language "GO", version 317, remark and extFields always
// present (internal/remote/codec.go).
func TestDecode_GoClientFrame(t *testing.T) {
	header := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	c, err := Decode(frameOf(SerializeJSON, []byte(header), nil))
	require.NoError(t, err)
	require.Equal(t, &Command{
		Code: 105, Language: "GO", Version: 317, Opaque: 1,
		ExtFields: map[string]string{"topic": "TopicTest"},
	}, c)
}

// TestDecode_JavaFrame decodes what a Java client or broker writes with
// fastjson: sorted keys, serializeTypeCurrentRPC, nulls omitted; plus the
// liberal forms fastjson accepts for ext values.
func TestDecode_JavaFrame(t *testing.T) {
	header := `{"code":34,"extFields":{"a":"x","n":12,"b":true,"z":null,"o":{"k":[1,2]}},` +
		`"flag":2,"language":"JAVA","opaque":-5,"serializeTypeCurrentRPC":"JSON","version":"121"}`
	c, err := Decode(frameOf(SerializeJSON, []byte(header), []byte("{}")))
	require.NoError(t, err)
	require.Equal(t, &Command{
		Code: 34, Language: "JAVA", Version: 121, Opaque: -5, Flag: FlagOneway,
		ExtFields: map[string]string{"a": "x", "n": "12", "b": "true", "o": `{"k":[1,2]}`},
		Body:      []byte("{}"),
	}, c)
	require.True(t, c.IsOneway())
	require.False(t, c.IsResponse())
}

func TestDecode_JSONStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"\u0001a\u0002"`, "\x01a\x02"},
		{`"\ud83d\ude00"`, "😀"},
		{`"\ud83d"`, "\uFFFD"},
		{`"\ud83dx"`, "\uFFFDx"},
		{`"标签"`, "标签"},
		{`"a\/b\\c\"d\n"`, "a/b\\c\"d\n"},
		{"\"\xff\"", "\uFFFD"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			h := `{"remark":` + tc.in + `,"extFields":{"k":` + tc.in + `}}`
			c, err := Decode(frameOf(SerializeJSON, []byte(h), nil))
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Remark)
			require.Equal(t, tc.want, c.ExtFields["k"])
		})
	}
}

func TestDecode_BadFrames(t *testing.T) {
	good, err := NewRequest(10, map[string]string{"a": "b"}, []byte("body")).AppendFrame(nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"short", []byte{0, 0, 0, 4, 0}, ErrBadFrameLength},
		{"length mismatch", good[:len(good)-1], ErrBadFrameLength},
		{"negative length", []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}, ErrBadFrameLength},
		{"length below 4", []byte{0, 0, 0, 3, 0, 0, 0, 0}[:7], ErrBadFrameLength},
		{"header past frame", frameOf(SerializeJSON, nil, nil)[:4:4], ErrBadFrameLength},
		{"header length too big", append([]byte{0, 0, 0, 6, 0, 0, 0, 3}, '{', '}'), ErrBadHeaderLength},
		{"serialize type 2", frameOf(2, []byte("{}"), nil), ErrBadSerializeType},
		{"empty JSON", frameOf(SerializeJSON, nil, nil), ErrBadHeader},
		{"bad JSON", frameOf(SerializeJSON, []byte(`{"code":1,}`), nil), ErrBadHeader},
		{"JSON array", frameOf(SerializeJSON, []byte(`[1]`), nil), ErrBadHeader},
		{"JSON trailing", frameOf(SerializeJSON, []byte(`{} x`), nil), ErrBadHeader},
		{"float code", frameOf(SerializeJSON, []byte(`{"code":1.5}`), nil), ErrBadHeader},
		{"huge code", frameOf(SerializeJSON, []byte(`{"code":4294967296}`), nil), ErrBadHeader},
		{"ext not object", frameOf(SerializeJSON, []byte(`{"extFields":"x"}`), nil), ErrBadHeader},
		{"control char", frameOf(SerializeJSON, []byte("{\"remark\":\"\x01\"}"), nil), ErrBadHeader},
		{"short ROCKETMQ", frameOf(SerializeRocketMQ, make([]byte, 20), nil), ErrBadHeader},
		{"ROCKETMQ remark past header", frameOf(SerializeRocketMQ, append(make([]byte, 13), 0, 0, 0, 9, 0, 0, 0, 0), nil), ErrBadHeader},
		{"ROCKETMQ negative ext", frameOf(SerializeRocketMQ, append(make([]byte, 17), 0xFF, 0xFF, 0xFF, 0xFF), nil), ErrBadHeader},
		{"ROCKETMQ trailing", frameOf(SerializeRocketMQ, make([]byte, 22), nil), ErrBadHeader},
		{"ROCKETMQ key past ext", frameOf(SerializeRocketMQ, append(make([]byte, 17), 0, 0, 0, 2, 0, 5), nil), ErrBadHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.in)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestFrameReader_ReadsStream(t *testing.T) {
	var stream []byte
	var want []*Command
	for i, st := range []SerializeType{SerializeJSON, SerializeRocketMQ, SerializeJSON} {
		c := NewRequest(SendMessageV2, map[string]string{"b": "T", "e": string(rune('0' + i))}, bytes.Repeat([]byte{byte(i)}, i*100))
		c.Opaque = int32(i)
		c.SerializeType = st
		if len(c.Body) == 0 {
			c.Body = nil
		}
		var err error
		stream, err = c.AppendFrame(stream)
		require.NoError(t, err)
		want = append(want, c)
	}
	fr := NewFrameReader(bufio.NewReader(bytes.NewReader(stream)), 0)
	for _, w := range want {
		got, err := fr.ReadCommand()
		require.NoError(t, err)
		require.Equal(t, w, got)
	}
	_, err := fr.ReadCommand()
	require.Equal(t, io.EOF, err)
}

func TestFrameReader_Errors(t *testing.T) {
	good, err := NewRequest(10, nil, []byte("body")).AppendFrame(nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"truncated length", good[:2], 0, io.ErrUnexpectedEOF},
		{"truncated header length", good[:6], 0, io.ErrUnexpectedEOF},
		{"truncated body", good[:len(good)-1], 0, io.ErrUnexpectedEOF},
		{"100 MiB length", []byte{0x06, 0x40, 0x00, 0x00, 0, 0, 0, 2, '{', '}'}, 0, ErrFrameTooLarge},
		{"over a small max", good, len(good) - 1, ErrFrameTooLarge},
		{"negative length", []byte{0x80, 0, 0, 0}, 0, ErrBadFrameLength},
		{"header length past frame", []byte{0, 0, 0, 4, 0, 0, 0, 1}, 0, ErrBadHeaderLength},
		{"bad type", []byte{0, 0, 0, 6, 9, 0, 0, 2, '{', '}'}, 0, ErrBadSerializeType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := NewFrameReader(bufio.NewReader(bytes.NewReader(tc.in)), tc.max)
			_, err := fr.ReadCommand()
			require.ErrorIs(t, err, tc.want)
		})
	}
	t.Run("exactly max", func(t *testing.T) {
		fr := NewFrameReader(bufio.NewReader(bytes.NewReader(good)), len(good))
		_, err := fr.ReadCommand()
		require.NoError(t, err)
	})
}

// TestFrameReader_LargeFrameGrows reads a frame larger than readChunk that
// arrives in pieces.
func TestFrameReader_LargeFrameGrows(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (3*readChunk)/16+5)
	frame, err := NewRequest(PullMessage, nil, body).AppendFrame(nil)
	require.NoError(t, err)
	fr := NewFrameReader(bufio.NewReader(io.MultiReader(bytes.NewReader(frame[:100]), bytes.NewReader(frame[100:]))), 0)
	c, err := fr.ReadCommand()
	require.NoError(t, err)
	require.Equal(t, body, c.Body)
}

func TestCommand_Encode_Errors(t *testing.T) {
	for _, c := range []*Command{
		{Code: 200050, SerializeType: SerializeRocketMQ},
		{Version: 1 << 16, SerializeType: SerializeRocketMQ},
		{ExtFields: map[string]string{strings.Repeat("k", 1<<16): ""}, SerializeType: SerializeRocketMQ},
		{SerializeType: 3},
	} {
		_, err := c.AppendFrame(nil)
		require.ErrorIs(t, err, ErrEncode)
	}
	// JSON carries Java's full int range, POP codes included.
	f, err := (&Command{Code: PopMessage}).AppendFrame(nil)
	require.NoError(t, err)
	c, err := Decode(f)
	require.NoError(t, err)
	require.Equal(t, PopMessage, c.Code)
}

func TestCommand_JSONEscapesInvalidUTF8(t *testing.T) {
	c := &Command{Remark: "a\xffb\tc", ExtFields: map[string]string{"\xfe": "\x00"}}
	f, err := c.AppendFrame(nil)
	require.NoError(t, err)
	// As fastjson writes strings: invalid bytes become U+FFFD, written as
	// is; control characters as \uXXXX in upper-case hex.
	require.Contains(t, string(f), "\"remark\":\"a\uFFFDb\\tc\"")
	require.Contains(t, string(f), "{\"\uFFFD\":\"\\u0000\"}")
	back, err := Decode(f)
	require.NoError(t, err)
	require.Equal(t, "a\uFFFDb\tc", back.Remark)
	require.Equal(t, map[string]string{"\uFFFD": "\x00"}, back.ExtFields)
}

func TestCommand_WriteTo(t *testing.T) {
	c := NewRequest(SendMessage, map[string]string{"topic": "T"}, []byte("body"))
	want, err := c.AppendFrame(nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	n, err := c.WriteTo(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), n)
	require.Equal(t, want, buf.Bytes())
}

func TestLanguageCodes(t *testing.T) {
	for code, name := range languages {
		require.Equal(t, byte(code), languageCode(name))
		require.Equal(t, name, languageName(byte(code)))
	}
	require.Equal(t, byte(7), languageCode("COBOL"))
	require.Equal(t, "OTHER", languageName(200))
	c, err := Decode(frameOf(SerializeJSON, []byte(`{"language":9}`), nil))
	require.NoError(t, err)
	require.Equal(t, "GO", c.Language)
}

// goClientCommand mirrors the Go client's RemotingCommand as its JSON
// codec reads it (internal/remote/codec.go): int16 code and version, and
// ext values that must all be JSON strings.
type goClientCommand struct {
	Code      int16             `json:"code"`
	Language  json.RawMessage   `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// TestOurJSONHeader_ReadsAsGoClientStruct decodes our response header into
// the Go client's struct shape, as its json-iterator codec does (the
// client_compat_test.go runs the client itself).
func TestOurJSONHeader_ReadsAsGoClientStruct(t *testing.T) {
	resp := NewResponse(Success, "ok\x01")
	resp.Opaque = 77
	resp.ExtFields = map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "42"}
	f, err := resp.AppendFrame(nil)
	require.NoError(t, err)
	hlen := binary.BigEndian.Uint32(f[4:]) & maxHeaderLength
	var g goClientCommand
	require.NoError(t, json.Unmarshal(f[8:8+hlen], &g))
	require.Equal(t, goClientCommand{
		Code: 0, Language: json.RawMessage(`"JAVA"`), Version: DefaultVersion, Opaque: 77, Flag: FlagResponse,
		Remark: "ok\x01", ExtFields: resp.ExtFields,
	}, g)
}

// TestExtList_Written: ExtList's fields go out after ExtFields's, in
// either header form, and read back as ext fields; Ext and SetExt see
// them.
func TestExtList_Written(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		c := NewResponse(Success, "")
		c.SerializeType = st
		c.ExtFields = map[string]string{"a": "1"}
		c.ExtList = []string{"msgId", "7F00", "queueOffset", "\x01\"42"}
		require.Equal(t, "\x01\"42", c.Ext("queueOffset"))
		frame, err := c.AppendFrame(nil)
		require.NoError(t, err)
		back, err := Decode(frame)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"a": "1", "msgId": "7F00", "queueOffset": "\x01\"42"}, back.ExtFields, st)
		d := c.Clone()
		d.SetExt("msgId", "X")
		require.Nil(t, d.ExtList)
		require.Equal(t, map[string]string{"a": "1", "msgId": "X", "queueOffset": "\x01\"42"}, d.ExtFields)
		require.Equal(t, "7F00", c.Ext("msgId"), "the clone's SetExt changed the original")
	}
}
