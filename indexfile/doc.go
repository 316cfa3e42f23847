// Package indexfile is RocketMQ's message index: IndexFile and IndexService.
// It finds the CommitLog offsets of the messages stored under a key (a
// message's UNIQ_KEY or one of its KEYS) within a time range, for
// QUERY_MESSAGE and "query message by key".
//
// The index is a run of files in {root}/index/, each named by its creation
// time, yyyyMMddHHmmssSSS in local time, so that names sort by age. Every
// file has the same size, 40 + slots×4 + indexes×20 bytes (420,000,040 with
// the defaults of 5,000,000 slots and 20,000,000 entries). The bytes are
// RocketMQ's, big-endian:
//
//	+---------------------------------------------------------------+
//	| header, 40 bytes                                              |
//	|   @0  beginTimestamp int64   store time (ms) of entry 1       |
//	|   @8  endTimestamp   int64   store time of the newest entry   |
//	|   @16 beginPhyOffset int64   CommitLog offset of entry 1      |
//	|   @24 endPhyOffset   int64   CommitLog offset of the newest   |
//	|   @32 hashSlotCount  int32   slots in use                     |
//	|   @36 indexCount     int32   next entry number (starts at 1)  |
//	+---------------------------------------------------------------+
//	| slot 0 | slot 1 | ... | slot slots-1     int32 each:          |
//	|                                  newest entry of the slot,    |
//	|                                  0 = empty                    |
//	+---------------------------------------------------------------+
//	| entry 0 (never used) | entry 1 | ... | entry indexes-1        |
//	+---------------------------------------------------------------+
//
//	entry, 20 bytes:
//	+-------------+----------------+---------------+---------------+
//	| keyHash i32 | phyOffset i64  | timeDiff i32  | prevIndex i32 |
//	+-------------+----------------+---------------+---------------+
//	keyHash   |JavaHash("topic#key")|, with MinInt32 made 0 (KeyHash)
//	timeDiff  seconds from beginTimestamp, clamped to [0, MaxInt32]
//	prevIndex the slot's previous entry, 0 = end of the chain
//
// A key lives in slot keyHash % slots. Putting an entry writes it at entry
// indexCount with prevIndex = the slot's old value, points the slot at it
// and increments indexCount. A query walks a slot's chain from newest to
// oldest and keeps the offsets whose keyHash and time match; different keys
// with the same hash are not told apart, so the caller checks each message.
//
// A file is full when indexCount reaches the entry count; the next file
// starts from its end values, and the full one is flushed and its
// endTimestamp reported (Options.OnFileFull) for the checkpoint's
// indexMsgTimestamp. RocketMQ flushes no other time but at shutdown; here
// FlushMark also flushes every file and returns the state the newest one
// was in (a Mark), which the store writes into its checkpoint every
// second. After a crash, RollBack(mark) returns the newest file to that
// state and deletes the later ones (an entry never changes once written;
// hash slots that point past the mark are set again from the entries), so
// the store indexes again only what came after; with no mark,
// DropAfter(indexMsgTimestamp) drops the files that may have lost entries,
// as RocketMQ does. CutAt forgets the entries of records the CommitLog
// lost. Dispatching from the recovered CommitLog offset then fills the
// files again: Put skips messages below the newest file's endPhyOffset.
//
// Readers never lock out the writer: a Put publishes an entry by storing
// the slot and then indexCount atomically, after writing the entry, and a
// Query follows only entries below the indexCount it loaded.
//
// A Service faults in the newest file's pages ahead of Put in the
// background (its hash slots at once, its entries 1 MiB ahead), so the
// dispatcher does not wait for the kernel to zero fresh pages.
//
// PutBatch indexes a run of messages to the same bytes as one Put each,
// but reads the hash slots of up to 64 keys before writing any of their
// entries: the slot table is 20 MB, so most slot reads miss the cache, and
// one by one each waits alone behind the barrier of the entry before it.
package indexfile
