package namesrv

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

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
	rb, err := readCompressedBody(&chunkReader{r: bufio.NewReaderSize(io.LimitReader(zr, maxInflatedBody), 64<<10)}, version)
	if err != nil {
		return nil, fmt.Errorf("%w: compressed: %w", ErrBadBody, err)
	}
	return rb, nil
}

// readCompressedBody reads RegisterBrokerBody.encode(true)'s inflated
// stream: data version JSON; topic count; each topic in TopicConfig's
// space-separated string form; filter server list JSON; from V5_0_0 a count
// of static-topic mappings, each JSON (skipped).
func readCompressedBody(r *chunkReader, version int) (*protocol.RegisterBrokerBody, error) {
	rb := &protocol.RegisterBrokerBody{}
	w := &rb.TopicConfigSerializeWrapper
	dv, err := r.chunk()
	if err != nil {
		return nil, fmt.Errorf("data version: %w", err)
	}
	if err := unmarshalFastJSON(dv, &w.DataVersion); err != nil {
		return nil, err
	}
	n, err := r.int32()
	if err != nil || n < 0 {
		return nil, fmt.Errorf("topic count %d: %w", n, err)
	}
	w.TopicConfigTable = make(map[string]protocol.TopicConfig, min(n, 1024))
	for range n {
		b, err := r.chunk()
		if err != nil {
			return nil, fmt.Errorf("topic config: %w", err)
		}
		tc, ok := parseTopicConfigString(b)
		if !ok {
			return nil, fmt.Errorf("topic config %.100q", b)
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	fl, err := r.chunk()
	if err != nil {
		return nil, fmt.Errorf("filter server list: %w", err)
	}
	_ = json.Unmarshal(fl, &rb.FilterServerList) // Java logs and goes on
	if version >= versionV5_0_0 {
		m, err := r.int32()
		if err != nil || m < 0 {
			return nil, fmt.Errorf("mapping count %d: %w", m, err)
		}
		for range m {
			if _, err := r.chunk(); err != nil {
				return nil, fmt.Errorf("topic queue mapping: %w", err)
			}
		}
	}
	return rb, nil
}

// chunkReader reads the int32-length-prefixed items of a compressed
// REGISTER_BROKER body into one reused buffer.
type chunkReader struct {
	r   *bufio.Reader
	buf []byte
}

func (c *chunkReader) int32() (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return 0, err
	}
	return int(int32(binary.BigEndian.Uint32(b[:]))), nil
}

// chunk reads an int32 length and that many bytes, valid until the next
// call. The buffer grows as the bytes come, so a false length costs no
// more than the stream.
func (c *chunkReader) chunk() ([]byte, error) {
	n, err := c.int32()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("negative length %d", n)
	}
	c.buf = c.buf[:0]
	for len(c.buf) < n {
		step := min(n-len(c.buf), 64<<10)
		at := len(c.buf)
		c.buf = slices.Grow(c.buf, step)[:at+step]
		if _, err := io.ReadFull(c.r, c.buf[at:]); err != nil {
			return nil, err
		}
	}
	return c.buf, nil
}

// parseTopicConfigString reads TopicConfig.encode()'s form: "name read
// write perm filterType [attributesJSON]". It carries neither topicSysFlag
// nor order.
func parseTopicConfigString(b []byte) (protocol.TopicConfig, bool) {
	f := bytes.Split(b, []byte{' '})
	if len(f) < 5 {
		return protocol.TopicConfig{}, false
	}
	tc := protocol.TopicConfig{TopicName: string(f[0]), TopicFilterType: filterTypeString(f[4])}
	var err1, err2, err3 error
	tc.ReadQueueNums, err1 = strconv.Atoi(string(f[1]))
	tc.WriteQueueNums, err2 = strconv.Atoi(string(f[2]))
	tc.Perm, err3 = strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil || err3 != nil {
		return protocol.TopicConfig{}, false
	}
	switch {
	case len(f) < 6:
	case string(f[5]) == "{}":
		tc.Attributes = map[string]string{}
	default:
		_ = json.Unmarshal(f[5], &tc.Attributes) // Java ignores failures: values may hold spaces
	}
	return tc, true
}

// filterTypeString returns the filter type without a new string for the
// two RocketMQ has.
func filterTypeString(b []byte) string {
	switch string(b) {
	case "SINGLE_TAG":
		return "SINGLE_TAG"
	case "MULTI_TAG":
		return "MULTI_TAG"
	}
	return string(b)
}

// EncodeRegisterBrokerBody writes b as plain JSON, the form Java brokers
// send by default (compressedRegister off).
func EncodeRegisterBrokerBody(b *protocol.RegisterBrokerBody) []byte {
	return b.AppendJSON(nil)
}
