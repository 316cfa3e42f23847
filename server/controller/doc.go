// Package controller is RocketMQ 5's controller (RIP-44, "controller
// mode"): a small Raft-replicated state machine that keeps, per broker
// group (broker name), the replicas with their controller-assigned ids,
// addresses and register check codes, the SyncStateSet with its epoch, and
// the master with its epoch; it elects a new master from the live
// SyncStateSet members when the master dies.
//
// The replicated part is State, a pure function of the applied commands
// (no clocks, I/O or randomness inside Apply), replicated with
// github.com/hashicorp/raft over a durable bolt log under
// controllerStorePath, with file snapshots. Broker liveness (BROKER_HEARTBEAT)
// is kept outside it, per controller, as upstream does. Only the Raft
// leader answers requests, and only after a Barrier has applied everything
// its log holds; the others answer CONTROLLER_NOT_LEADER.
//
// A write is decided in two steps: the leader checks what needs liveness
// (who is alive, whom the election policy picks) and proposes a command
// carrying the epochs it saw; Apply checks those epochs again, so two
// concurrent requests can never both win (the loser gets a
// CONTROLLER_FENCED_* code).
//
// Raft and the controller's remoting requests share one TCP port (the
// controllerDLegerPeers address), as DLedger does: a Raft connection starts
// with one marker byte, a remoting frame with the high byte of its length,
// which is 0.
package controller
