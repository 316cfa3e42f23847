package message

import (
	"errors"
	"hash/crc32"
	"net/netip"
)

// Magic codes (RocketMQ MessageDecoder MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2
// and BLANK_MAGIC_CODE). The magic decides the width of the TOPIC length field.
const (
	// MagicV1 marks a record whose topic length is 1 byte (0xDAA320A7).
	MagicV1 int32 = -626843481
	// MagicV2 marks a record whose topic length is 2 bytes (0xDAA320AB).
	// RocketMQ 5.x writes it only for topics longer than 127 bytes.
	MagicV2 int32 = -626843477
	// MagicBlank marks the END_OF_FILE padding record (0xCBD43194): only
	// TOTALSIZE (the bytes left in the file) and the magic are meaningful.
	MagicBlank int32 = -875286124
)

// SYSFLAG bits (RocketMQ MessageSysFlag).
const (
	// FlagCompressed: the body is compressed (COMPRESSED_FLAG).
	FlagCompressed int32 = 0x1
	// FlagMultiTags: the TAGS property holds several tags (MULTI_TAGS_FLAG).
	FlagMultiTags int32 = 0x2
	// TxPrepared: transaction half message (TRANSACTION_PREPARED_TYPE).
	TxPrepared int32 = 0x4
	// TxCommit: committed transaction message (TRANSACTION_COMMIT_TYPE).
	TxCommit int32 = 0x8
	// TxRollback: rolled back transaction message (TRANSACTION_ROLLBACK_TYPE).
	TxRollback int32 = 0xC
	// TxMask selects the transaction type; 0 is TRANSACTION_NOT_TYPE.
	TxMask int32 = 0xC
	// FlagBornHostV6: BORNHOST holds a 16-byte IPv6 address (BORNHOST_V6_FLAG).
	FlagBornHostV6 int32 = 0x10
	// FlagStoreHostV6: STOREHOST holds a 16-byte IPv6 address
	// (STOREHOSTADDRESS_V6_FLAG).
	FlagStoreHostV6 int32 = 0x20
	// FlagNeedUnwrap: 5.x NEED_UNWRAP_FLAG.
	FlagNeedUnwrap int32 = 0x40
	// FlagInnerBatch: 5.x INNER_BATCH_FLAG (the record is a batch stored as one).
	FlagInnerBatch int32 = 0x80
	// FlagCompressionTypeMask selects the compression type,
	// (sysFlag & mask) >> 8: 0 zlib (legacy), 1 LZ4, 2 ZSTD, 3 ZLIB.
	FlagCompressionTypeMask int32 = 0x700
)

// Size limits of the record format.
const (
	// MaxPropertiesLen is the longest encoded properties string in bytes:
	// its length field is a signed int16.
	MaxPropertiesLen = 32767
	// MaxTopicLenV1 is the longest topic, in bytes, that a MagicV1 record
	// can hold (signed 1-byte length). Longer topics use MagicV2.
	MaxTopicLenV1 = 127
	// MaxTopicLen is the longest topic, in bytes, that any record can hold
	// (MagicV2, signed 2-byte length).
	MaxTopicLen = 32767
	// MinRecordSize is the size of a MagicV1 record with IPv4 born and store
	// hosts and an empty body, topic and properties: the fixed fields
	// 4+4+4+4+4+8+8+4+8 (TOTALSIZE..BORNTIMESTAMP) + 8 (BORNHOST) + 8
	// (STORETIMESTAMP) + 8 (STOREHOST) + 4+8 (RECONSUMETIMES, PREPARED TX
	// OFFSET) = 84, plus the length fields 4 (body) + 1 (topic) + 2
	// (properties). A MagicV2 record is one byte longer, and each IPv6 host
	// adds 12.
	MinRecordSize = 91
)

// Errors returned by this package. Returned errors wrap them with details;
// test with errors.Is.
var (
	// ErrCorrupt means the bytes are not a well-formed record: a bad magic,
	// a length field that disagrees with TOTALSIZE, or a CRC mismatch.
	ErrCorrupt = errors.New("message: corrupt record")
	// ErrBlank means the bytes hold the END_OF_FILE padding record
	// (MagicBlank); the reader continues at the start of the next file.
	ErrBlank = errors.New("message: end-of-file blank record")
	// ErrTooLarge means a field does not fit the record format: properties
	// over MaxPropertiesLen, a topic over MaxTopicLen, or a record over 2 GiB.
	ErrTooLarge = errors.New("message: too large for a record")
	// ErrBadHost means a host address can not be stored: an AddrPort with
	// no address but a port.
	ErrBadHost = errors.New("message: invalid host address")
	// ErrBadMsgID means a string is not an offset message id or UNIQ_KEY.
	ErrBadMsgID = errors.New("message: invalid message id")
	// ErrBadTopic means a topic name breaks RocketMQ's TopicValidator rules.
	ErrBadTopic = errors.New("message: invalid topic")
	// ErrBadProperties means the properties hold a NUL byte, which a record
	// torn by a crash shows (see Record.CheckWhole), so no put may write one.
	ErrBadProperties = errors.New("message: invalid properties")
)

// Message is one message as stored in a CommitLog record (RocketMQ's
// MessageExtBrokerInner). The zero value is a valid, empty message.
//
// Messages returned by this package own their Body and strings; nothing
// aliases the record they were decoded from.
type Message struct {
	Topic   string
	QueueID int32
	// Flag is the producer's Message.flag, stored as is.
	Flag int32
	// Body is stored as is (compressed when SysFlag has FlagCompressed).
	// Decoded messages have a nil Body when the body is empty.
	Body []byte
	// Properties is the encoded properties string (RocketMQ's
	// propertiesString); see EncodeProperties and LookupProperty.
	Properties string
	// SysFlag holds the MessageSysFlag bits. Encode overrides
	// FlagBornHostV6 and FlagStoreHostV6 to match BornHost and StoreHost.
	SysFlag       int32
	BornTimestamp int64 // ms since the epoch, from the producer
	// BornHost is the producer's address. The zero AddrPort is stored as
	// 0.0.0.0:0, an IPv4-mapped IPv6 address as IPv4, and a zone is dropped.
	BornHost       netip.AddrPort
	StoreTimestamp int64 // ms since the epoch, stamped by the CommitLog
	// StoreHost is the broker's address; stored like BornHost.
	StoreHost      netip.AddrPort
	ReconsumeTimes int32
	// PreparedTransactionOffset is, for a tx COMMIT/ROLLBACK record, the
	// CommitLog offset of its half message; otherwise 0.
	PreparedTransactionOffset int64
	// QueueOffset is the index of the message in its ConsumeQueue.
	QueueOffset int64
	// PhysicalOffset is the CommitLog offset of the record.
	PhysicalOffset int64
	// BodyCRC is written as is by Encode; compute it with BodyCRC(Body).
	// EncodeCRC computes and sets it.
	BodyCRC uint32
}

// BodyCRC returns the CRC stored in a record's BODYCRC field: IEEE CRC-32
// of body with the top bit cleared (RocketMQ UtilAll.crc32).
func BodyCRC(body []byte) uint32 {
	return crc32.ChecksumIEEE(body) & 0x7FFFFFFF
}
