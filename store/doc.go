// Package store is RocketMQ's message store (DefaultMessageStore): one
// CommitLog holding every message, a ConsumeQueue per topic/queue giving
// each message its logical offset, and IndexFiles to find messages by key
// and time. Dispatch (ReputMessageService) follows the CommitLog and builds
// the ConsumeQueues and the index, then tells arrival listeners. A put
// dispatches its own record before it returns (after its flush, under
// SYNC_FLUSH), so it is readable through GetMessage at once; a goroutine
// dispatches what puts could not: records recovered at start-up, and those
// a TransientStorePool commits later. A dispatch that finds several records
// indexes their keys together (indexfile.PutBatch), which is quicker than
// one by one.
//
// On disk, under the store's root:
//
//	commitlog/00000000000000000000         records, 1 GiB files
//	consumequeue/{topic}/{queueId}/{...}   20-byte units, 300,000 a file
//	index/{yyyyMMddHHmmssSSS}              key → offsets, by creation time
//	timerwheel  timerlog/{...}             pending timer messages (package timer)
//	config/timercheck                      the timer's progress
//	lock                                   flock held while open
//
// A message with TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS or
// __STARTDELIVERTIME in the future waits in rmq_sys_wheel_timer, queue 0,
// until the timer service (RocketMQ 5's TimerMessageStore) puts it into its
// real topic and queue at its time; see package timer for the files.
//
// The bytes are RocketMQ's, so a store directory moves between rocketstore
// and Apache RocketMQ.
//
// GetMessage and QueryMessage answer with slices of the mapped CommitLog,
// not copies: release the result when done with its records.
//
// Nothing is acknowledged that will not be delivered. The store refuses
// puts (ErrNotWritable, wrapping the cause) while any of these holds, and
// reads go on: the disk is full (ErrDiskFull; until expiry sees space
// again), dispatch stopped on a record it could not write into its
// ConsumeQueue or the index (ErrDispatchStopped; until it gets past it), or
// a CommitLog flush failed (ErrFlushFailed; until the store is reopened,
// as the page cache may have dropped what it could not write).
package store
