// Package message is the stored-message record of Apache RocketMQ's
// CommitLog, byte for byte, plus the small formats that travel with it:
// the properties string, tags codes, offset message ids, client message ids
// (UNIQ_KEY) and topic name rules.
//
// Encode writes a Message as a record without allocating, so the CommitLog
// can encode straight into its mapped file (EncodeCRC also computes the body
// CRC as it copies the body: with AVX-512 on amd64, in the same pass); Parse checks a record and
// returns a Record view whose methods read (and patch) fields in place;
// Decode copies a checked record into a Message.
//
// # Record layout
//
// Big endian. Offsets are for IPv4 born and store hosts; each IPv6 host
// (SYSFLAG 0x10 born, 0x20 store) is 20 bytes instead of 8, moving every
// later field by 12.
//
//	off  size  field
//	  0     4  TOTALSIZE        record length, this field included
//	  4     4  MAGICCODE        MagicV1 0xDAA320A7 | MagicV2 0xDAA320AB
//	  8     4  BODYCRC          crc32(body) & 0x7FFFFFFF
//	 12     4  QUEUEID
//	 16     4  FLAG             producer flag
//	 20     8  QUEUEOFFSET      ConsumeQueue index
//	 28     8  PHYSICALOFFSET   CommitLog offset of this record
//	 36     4  SYSFLAG          MessageSysFlag bits
//	 40     8  BORNTIMESTAMP    ms
//	 48   8|20 BORNHOST         IPv4 (4) or IPv6 (16) address · port int32
//	 56     8  STORETIMESTAMP   ms
//	 64   8|20 STOREHOST        address · port int32
//	 72     4  RECONSUMETIMES
//	 76     8  PREPARED TX OFFSET
//	 84  4+n   BODY             int32 length · bytes
//	    1|2+n  TOPIC            int8 length (v1) | int16 length (v2) · bytes
//	     2+n   PROPERTIES       int16 length (≤ 32767) · name 0x01 value 0x02 ...
//
//	+-----------+-------+--------+-------+------+-----------+------------+---------+
//	| TOTALSIZE | MAGIC | BODYCRC| QUEUE | FLAG | QUEUEOFF  | PHYSOFF    | SYSFLAG |
//	+-----------+-------+--------+-------+------+-----------+------------+---------+
//	| BORNTS | BORNHOST | STORETS | STOREHOST | RECONSUME | PREPARED TX OFFSET      |
//	+--------+----------+---------+-----------+-----------+-------------------------+
//	| BODYLEN | BODY ... | TOPICLEN | TOPIC ... | PROPSLEN | PROPERTIES ...         |
//	+---------+----------+----------+-----------+----------+------------------------+
//
// The record length is MinRecordSize (91) + body + topic + properties, +1
// for MagicV2 (used for topics over 127 bytes) and +12 per IPv6 host.
//
// A file that can't fit the next record ends with an END_OF_FILE record:
// TOTALSIZE (the bytes left in the file) and MagicBlank, nothing else.
// Parse reports it as ErrBlank.
//
// # Message ids
//
// OffsetMsgID is uppercase hex of store IP · port int32 · CommitLog offset
// int64. UniqIDGenerator makes UNIQ_KEY ids like RocketMQ's
// MessageClientIDSetter. Neither uses global state.
package message
