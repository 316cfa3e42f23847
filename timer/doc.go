// Package timer holds the files of RocketMQ 5's timer messages
// (TimerMessageStore): the timing wheel, the timer log and the timer
// checkpoint, byte for byte as Apache RocketMQ writes them, so a store
// folder moves between rocketstore and RocketMQ. The scheduling itself
// (which message goes into which slot, delivery, recovery) is done by
// package store; this package only reads and writes the files.
//
// Every pending timer lives in these mapped files, not in the Go heap: a
// slot of the wheel points at the newest unit of its time in the log, and
// each unit at the one before it in the same slot.
//
// {root}/timerwheel, one file of 2 × 604800 slots (14 days of seconds at a
// precision of 1 s), 32 bytes each, big endian; slot index =
// timeMs / precisionMs mod 1,209,600:
//
//	+------------------------+---------------+--------------+-----------+-------------+
//	| timeMs/precision int64 | firstPos int64 | lastPos int64 | num int32 | magic int32 |
//	+------------------------+---------------+--------------+-----------+-------------+
//
// {root}/timerlog/{20-digit offset}, 100 MiB files of 52-byte units; a file
// ends with a blank unit {bytes left int32, 0 int64, 0xCBD43194 int32}:
//
//	+------------+---------------+-------------+------------------+----------------------------+
//	| size int32 | prevPos int64 | magic int32 | writeTimeMs int64 | delayedMs-writeTimeMs int32 |
//	+------------+---------------+-------------+------------------+----------------------------+
//	| commitLogOffset int64 | size int32 | hash(REAL_TOPIC) int32 | reserved int64 |
//	+-----------------------+------------+------------------------+----------------+
//
// {root}/config/timercheck, one 4 KiB page: lastReadTimeMs @0,
// lastTimerLogFlushPos @8, lastTimerQueueOffset @16, masterTimerQueueOffset
// @24, dataVersion {stateVersion @32, timestamp @40, counter @48}; and,
// rocketstore's own, past what RocketMQ reads: the CommitLog offset from
// which deliveries of lastReadTimeMs on were written @64, and 1 @72 when
// that offset is set.
package timer
