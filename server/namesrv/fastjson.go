package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// ErrBadBody: a request body does not decode.
var ErrBadBody = errors.New("namesrv: malformed body")

// unmarshalFastJSON is json.Unmarshal for text fastjson wrote.
func unmarshalFastJSON(b []byte, v any) error {
	if err := fastjson.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBody, err)
	}
	return nil
}

// versionV5_0_0 is the MQVersion ordinal from which compressed
// REGISTER_BROKER bodies carry static-topic mappings.
const versionV5_0_0 = 413

// versionV3_0_11 is the MQVersion ordinal from which REGISTER_BROKER
// bodies are RegisterBrokerBody; older brokers send the wrapper alone.
const versionV3_0_11 = 37

// maxInflatedBody bounds what a compressed REGISTER_BROKER body may
// inflate to, against zip bombs: 64 MiB holds some 100 000 topics.
const maxInflatedBody = 64 << 20

// DecodeRegisterBrokerBody reads the body of REGISTER_BROKER from a broker
// of the given MQVersion ordinal: the plain JSON form, or with compressed
// set the deflated form Java brokers send when compressedRegister is on.
func DecodeRegisterBrokerBody(body []byte, compressed bool, version int) (*protocol.RegisterBrokerBody, error) {
	if body == nil {
		return &protocol.RegisterBrokerBody{}, nil
	}
	if version < versionV3_0_11 {
		var w protocol.TopicConfigSerializeWrapper
		if err := unmarshalFastJSON(body, &w); err != nil {
			return nil, err
		}
		return &protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: w}, nil
	}
	if !compressed {
		var rb protocol.RegisterBrokerBody
		if err := unmarshalFastJSON(body, &rb); err != nil {
			return nil, err
		}
		return &rb, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed: %w", ErrBadBody, err)
	}
	defer zr.Close()
	rb, err := readCompressedBody(io.LimitReader(zr, maxInflatedBody), version)
	if err != nil {
		return nil, fmt.Errorf("%w: compressed: %w", ErrBadBody, err)
	}
	return rb, nil
}

// readCompressedBody reads RegisterBrokerBody.encode(true)'s inflated
// stream: data version JSON; topic count; each topic in TopicConfig's
// space-separated string form; filter server list JSON; from V5_0_0 a count
// of static-topic mappings, each JSON (skipped).
func readCompressedBody(r io.Reader, version int) (*protocol.RegisterBrokerBody, error) {
	rb := &protocol.RegisterBrokerBody{}
	w := &rb.TopicConfigSerializeWrapper
	dv, err := readChunk(r)
	if err != nil {
		return nil, fmt.Errorf("data version: %w", err)
	}
	if err := unmarshalFastJSON(dv, &w.DataVersion); err != nil {
		return nil, err
	}
	n, err := readInt32(r)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("topic count %d: %w", n, err)
	}
	w.TopicConfigTable = make(map[string]protocol.TopicConfig, min(n, 1024))
	for range n {
		b, err := readChunk(r)
		if err != nil {
			return nil, fmt.Errorf("topic config: %w", err)
		}
		tc, ok := parseTopicConfigString(string(b))
		if !ok {
			return nil, fmt.Errorf("topic config %.100q", b)
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	fl, err := readChunk(r)
	if err != nil {
		return nil, fmt.Errorf("filter server list: %w", err)
	}
	_ = json.Unmarshal(fl, &rb.FilterServerList) // Java logs and goes on
	if version >= versionV5_0_0 {
		m, err := readInt32(r)
		if err != nil || m < 0 {
			return nil, fmt.Errorf("mapping count %d: %w", m, err)
		}
		for range m {
			if _, err := readChunk(r); err != nil {
				return nil, fmt.Errorf("topic queue mapping: %w", err)
			}
		}
	}
	return rb, nil
}

func readInt32(r io.Reader) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return int(int32(binary.BigEndian.Uint32(b[:]))), nil
}

// readChunk reads an int32 length and that many bytes; the bytes are
// read as they come, so a false length costs no more than the stream.
func readChunk(r io.Reader) ([]byte, error) {
	n, err := readInt32(r)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("negative length %d", n)
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parseTopicConfigString reads TopicConfig.encode()'s form: "name read
// write perm filterType [attributesJSON]". It carries neither topicSysFlag
// nor order.
func parseTopicConfigString(s string) (protocol.TopicConfig, bool) {
	f := strings.Split(s, " ")
	if len(f) < 5 {
		return protocol.TopicConfig{}, false
	}
	tc := protocol.TopicConfig{TopicName: f[0], TopicFilterType: f[4]}
	var err1, err2, err3 error
	tc.ReadQueueNums, err1 = strconv.Atoi(f[1])
	tc.WriteQueueNums, err2 = strconv.Atoi(f[2])
	tc.Perm, err3 = strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return protocol.TopicConfig{}, false
	}
	if len(f) >= 6 {
		_ = json.Unmarshal([]byte(f[5]), &tc.Attributes) // Java ignores failures: values may hold spaces
	}
	return tc, true
}

// EncodeRegisterBrokerBody writes b as plain JSON, the form Java brokers
// send by default (compressedRegister off).
func EncodeRegisterBrokerBody(b *protocol.RegisterBrokerBody) []byte {
	return b.AppendJSON(nil)
}
