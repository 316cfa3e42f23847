// Package flush makes written data durable in the background, as RocketMQ's
// flush services do:
//
//   - GroupCommit (GroupCommitService, SYNC_FLUSH): a put waits until the
//     flushed offset passes its record; one flush serves every put waiting
//     when it starts, so many writers share one msync. A wait longer than
//     the timeout (5 s) returns ErrTimeout, RocketMQ's FLUSH_DISK_TIMEOUT;
//     the record stays written and is flushed later.
//   - Periodic runs a flush or commit every interval when at least some
//     pages wait, and a thorough one (any amount) every thorough interval:
//     FlushRealTimeService (500 ms, 4 pages, 10 s) for ASYNC_FLUSH,
//     CommitRealTimeService (200 ms, 4 pages, 200 ms) for pool buffers, and
//     FlushConsumeQueueService (1 s, 2 pages, 60 s).
package flush
