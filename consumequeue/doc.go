// Package consumequeue keeps RocketMQ's ConsumeQueues: one per topic and
// queue id, each a run of fixed-size files of 20-byte units that point into
// the CommitLog. Unit i of a queue (its logical offset, or queue offset) is
// the i-th message stored for that topic and queue.
//
// Files live in {root}/{topic}/{queueId}/ and are named by their first byte
// offset in the queue (unit index × 20) as 20 zero-padded digits, so the
// default file of 300,000 units starting at unit 300,000 is
// 00000000000006000000. The bytes are Apache RocketMQ's bytes. A file is
// made when the first unit needs it, sparse, as Apache makes it: its full
// 6,000,000 bytes are a hole, and the writer allocates disk ahead of itself
// a page at a time, doubling to 64 KiB (mappedfile.File.Reserve), so a
// queue holding one unit costs one 4 KiB block and a full disk fails a Put
// with an error, never a SIGBUS through the mapping. Once a sixteenth of a
// queue's last file is written, the next file is made in the background so
// a busy queue does not stop at the roll-over. A crash may leave that next
// file behind, all zeros; recovery deletes it.
//
// With Options.MaxMappedFiles the files of all queues share a budget of
// mappings (mappedfile.MapBudget): a file is mapped only once it is used
// often, and the least recently used idle files are unmapped past the
// budget; a file that is not mapped is read and written with pread and
// pwrite. No file keeps an fd open. Opening a queue reads its units up to
// the first that is not valid, then only the parts of the file past it that
// hold data (SEEK_DATA), never the whole 6,000,000 bytes; it maps nothing.
// Table.Flush visits the queues written since the last flush only.
//
// Unit layout (20 bytes, big endian):
//
//	0                   8         12                  20
//	+-------------------+---------+-------------------+
//	| CommitLog offset  |  size   |    tags code      |
//	|      int64        |  int32  |      int64        |
//	+-------------------+---------+-------------------+
//
// A unit is valid when offset ≥ 0 and size > 0. An all-zero unit marks the
// end of the written data. A queue whose first file starts at a non-zero
// unit index has its earlier slots in that file filled with placeholder
// units (0, 0x7FFFFFFF, 0): they keep positions aligned but are not
// messages, and the queue's MinOffset lies after them.
//
//	file 00000000000006000000 (first file, queue started at unit 300,004)
//	+-------------+-------------+-------------+-------------+----------+----
//	| placeholder | placeholder | placeholder | placeholder | unit     | ...
//	+-------------+-------------+-------------+-------------+----------+----
//	  300,000       300,001       300,002       300,003       300,004 = MinOffset
//
// A Queue has one writer at a time (the store's dispatch calling Put), any
// number of readers (Read, Unit, OffsetByTime and the position getters),
// one cleaner (DeleteExpired, CorrectMinOffset) and one flusher, all at the
// same time. Truncate runs during recovery, while nothing else writes.
// A Table holds every Queue of a store and is safe for concurrent use.
package consumequeue
