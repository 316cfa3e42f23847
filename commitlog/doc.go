// Package commitlog is RocketMQ's CommitLog: every message of every topic,
// appended one after another to a run of fixed-size memory-mapped files
// (1 GiB by default) named by the offset of their first byte (%020d).
//
// A Log is safe for concurrent use. Appends take one put lock, held only to
// stamp the store time, assign the physical offset and the queue offset of
// the message's topic/queue, and encode the record into the current file;
// the encode computes the body CRC as it copies the body, in one pass over
// it (message.EncodeCRC), where RocketMQ computes it before the lock. A record that does not fit
// the rest of a file leaves an END_OF_FILE blank record there and goes to the
// next file, which a background allocator has already created and faulted in:
//
//	file n                                       file n+1
//	+--------+--------+-----+--------+---------+ +--------+----
//	| record | record | ... | record | BLANK   | | record | ...
//	+--------+--------+-----+--------+---------+ +--------+----
//	                                  size=left,
//	                                  magic 0xCBD43194
//
// Records are RocketMQ's bytes; see package message for their layout.
//
// Recovery (Recover) tells a torn tail, the last writes of a crash, which
// it cuts as RocketMQ does, from corruption, a bad record in data that had
// been flushed, which it refuses with a *CorruptionError and changes
// nothing. Options.Repair moves the damaged files aside, renamed
// name.damaged-<UTC time> in the same folder, never deleted, and opens the
// log with the records before the damage.
package commitlog
