// Package ha replicates a CommitLog from a master store to slave stores
// over RocketMQ's HA wire (DefaultHAService, DefaultHAConnection,
// DefaultHAClient), byte for byte, so that a rocketstore slave can follow
// an Apache RocketMQ master and the other way round.
//
// The slave connects to the master's haListenPort and reports the end of
// its CommitLog, at connect, after each append and every
// haSendHeartbeatInterval (5 s):
//
//	slave → master   +------------------------+
//	                 | slaveMaxOffset int64   |   big endian
//	                 +------------------------+
//
// The master streams its CommitLog from there, straight from the mapped
// files, in frames of at most haTransferBatchSize (32 KiB) that never cross
// the end of a file; a frame of size 0 is a heartbeat, sent when nothing
// was written for haSendHeartbeatInterval:
//
//	master → slave   +---------------------+-------------+----------------+
//	                 | physicOffset int64  | size int32  | size bytes ... |
//	                 +---------------------+-------------+----------------+
//
// The slave appends the bytes at exactly physicOffset, which must be the
// end of its own CommitLog (a slave whose log is not a prefix of the
// master's is refused, with a log line, and nothing is written); its
// dispatcher then builds the ConsumeQueues and the index from the records.
// Once its CommitLog holds something and it has seen a frame, a slave
// reads straight into the free rest of its last CommitLog file (one
// readv(2) laid out as header slots and body spaces of the largest frame
// seen) instead of into its buffer and then copying: a frame that comes
// shorter or larger than laid out sends what followed it through the
// buffer, and the space past what was published is zeroed before the read
// returns (direct.go).
//
// Either side closes a connection it read nothing from for
// haHousekeepingInterval (20 s); the slave reconnects after 5 s.
//
// A SYNC_MASTER's puts wait, grouped, until a slave has acknowledged their
// end offset, up to slaveTimeout (3 s): see Master.WaitReplica.
//
// Where rocketstore differs: a slave that reports offset 0 gets the whole
// CommitLog the master still has (from its first file), where RocketMQ
// sends only from the start of the master's last file (maxOffset -
// maxOffset % mappedFileSizeCommitLog). Either way the first frame an
// empty slave takes starts a file, and its CommitLog starts there: a
// rocketstore slave follows an Apache master, and a master whose first
// files expired, as well as one whose log starts at 0.
//
// A slave's store follows the record boundaries of the bytes it appends:
// its checkpoint takes the store times of the master's records (so a
// crash recovery starts where the checkpoint says, not at the first file),
// and a clean close cuts a record that was half copied (so the store
// opens without crash recovery and reports the end of its last record).
package ha
