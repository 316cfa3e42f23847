// Package recovery holds what a store needs to come back after a crash:
// RocketMQ's checkpoint file and abort marker.
//
// The checkpoint ({root}/checkpoint) is a 4096-byte file, big endian:
//
//	+0   physicMsgTimestamp   int64  store time of the last flushed CommitLog record
//	+8   logicsMsgTimestamp   int64  store time of the last flushed ConsumeQueue unit
//	+16  indexMsgTimestamp    int64  end time of the last flushed IndexFile state
//	+24  masterFlushedOffset  int64  (5.0+)
//	+32  confirmPhyOffset     int64  (5.1.1+)
//	+40  zeros to +256 (RocketMQ's, unused)
//	+256 index mark (ours; RocketMQ neither reads nor writes it), see IndexMark:
//	     file int64 (the index file's name as a number), indexCount int32,
//	     endPhyOffset int64, endTimestamp int64, CRC32 (IEEE) of those 28 bytes
//	+288 zeros to 4096
//
// The abort file ({root}/abort) exists while a store is open and is removed
// by a clean shutdown: finding it at start means the last run crashed.
package recovery
