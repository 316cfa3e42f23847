package message_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"net/netip"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/message"
)

func zlibCompress(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// hostString formats a host as the Go client does: net.IP.String() + ":" + port.
func hostString(h netip.AddrPort) string {
	return fmt.Sprintf("%s:%d", h.Addr().Unmap(), h.Port())
}

// TestOfficialGoClient_DecodesOurRecords decodes a run of concatenated
// records, as a pull response carries them, with the official Go client's
// primitive.DecodeMessage. The client reads a 1-byte topic length, so only
// MagicV1 records are used.
func TestOfficialGoClient_DecodesOurRecords(t *testing.T) {
	gen := message.NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 42, 7)
	plain := []byte("compressed body compressed body compressed body")

	type input struct {
		m     *message.Message
		body  []byte // what the client should return (uncompressed)
		props map[string]string
	}
	var inputs []input
	for i, hosts := range [][2]string{
		{"10.1.2.3:54321", "192.168.0.1:10911"},
		{"[2001:db8::1]:40000", "192.168.0.1:10911"},
		{"10.1.2.3:54321", "[2001:db8::99]:10911"},
		{"[2001:db8::1]:40000", "[2001:db8::99]:10911"},
		{"10.1.2.3:1", "192.168.0.1:10911"}, // compressed body
		{"10.1.2.3:2", "192.168.0.1:10911"}, // no properties at all
	} {
		props := map[string]string{
			message.PropertyTags:                        fmt.Sprintf("Tag%d", i),
			message.PropertyKeys:                        fmt.Sprintf("order-%d user-%d", i, i),
			message.PropertyUniqClientMessageIDKeyIndex: gen.Next(testNow),
			message.PropertyWaitStoreMsgOK:              "true",
			"custom":                                    "标签",
		}
		body := []byte(fmt.Sprintf("body #%d", i))
		m := &message.Message{
			Topic:          fmt.Sprintf("TopicTest%d", i),
			QueueID:        int32(i),
			Flag:           int32(i * 3),
			Body:           body,
			Properties:     message.EncodeProperties(props),
			BornTimestamp:  testNow.UnixMilli() - 5,
			BornHost:       netip.MustParseAddrPort(hosts[0]),
			StoreTimestamp: testNow.UnixMilli(),
			StoreHost:      netip.MustParseAddrPort(hosts[1]),
			ReconsumeTimes: int32(i),
			QueueOffset:    int64(1000 + i),
		}
		switch i {
		case 4:
			m.Body = zlibCompress(t, plain)
			m.SysFlag |= message.FlagCompressed
			body = plain
		case 5:
			m.Properties = ""
			props = map[string]string{}
		}
		m.BodyCRC = message.BodyCRC(m.Body)
		inputs = append(inputs, input{m: m, body: body, props: props})
	}

	var run []byte
	for _, in := range inputs {
		in.m.PhysicalOffset = int64(len(run)) + 1<<30
		var err error
		run, err = message.AppendEncode(run, in.m)
		require.NoError(t, err)
	}

	got := primitive.DecodeMessage(run)
	require.Len(t, got, len(inputs))
	for i, in := range inputs {
		m, c := in.m, got[i]
		require.Equal(t, m.Topic, c.Topic, "record %d", i)
		require.Equal(t, in.body, c.Body, "record %d", i)
		require.Equal(t, in.props[message.PropertyTags], c.GetTags(), "record %d", i)
		require.Equal(t, in.props[message.PropertyKeys], c.GetKeys(), "record %d", i)
		require.Equal(t, in.props, c.GetProperties(), "record %d", i)
		require.Equal(t, int(m.QueueID), c.Queue.QueueId, "record %d", i)
		require.Equal(t, m.Flag, c.Flag, "record %d", i)
		require.Equal(t, m.QueueOffset, c.QueueOffset, "record %d", i)
		require.Equal(t, m.PhysicalOffset, c.CommitLogOffset, "record %d", i)
		require.Equal(t, m.StoreTimestamp, c.StoreTimestamp, "record %d", i)
		require.Equal(t, m.BornTimestamp, c.BornTimestamp, "record %d", i)
		require.Equal(t, m.ReconsumeTimes, c.ReconsumeTimes, "record %d", i)
		require.Equal(t, int32(m.BodyCRC), c.BodyCRC, "record %d", i)
		require.Equal(t, hostString(m.BornHost), c.BornHost, "record %d", i)
		require.Equal(t, hostString(m.StoreHost), c.StoreHost, "record %d", i)

		offsetID := message.OffsetMsgID(m.StoreHost, m.PhysicalOffset)
		require.Equal(t, offsetID, c.OffsetMsgId, "record %d", i)
		if uniq, ok := in.props[message.PropertyUniqClientMessageIDKeyIndex]; ok {
			require.Equal(t, uniq, c.MsgId, "record %d: MsgId is UNIQ_KEY", i)
		} else {
			require.Equal(t, offsetID, c.MsgId, "record %d: MsgId falls back to the offset id", i)
		}

		// The client's parser agrees with ours on the offset id.
		id, err := primitive.UnmarshalMsgID([]byte(offsetID))
		require.NoError(t, err)
		require.Equal(t, m.PhysicalOffset, id.Offset)
		require.Equal(t, int(m.StoreHost.Port()), id.Port)
	}
}
