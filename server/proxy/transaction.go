package proxy

import (
	"context"

	"github.com/rocketstore/rocketstore/message"
	v2 "github.com/rocketstore/rocketstore/server/proxy/v2pb"
)

// txData locates the half message of an open transaction
// (Apache's TransactionData): its producer group, its queue offset in
// the half topic and its CommitLog offset.
type txData struct {
	group            string
	tableOffset, phy int64
}

// noteTransaction remembers where the half message of transaction id is,
// for its EndTransaction. The producer group of the clients is the topic.
func (s *Server) noteTransaction(id, group string, tableOffset, phy int64) {
	s.mu.Lock()
	s.txs[id] = txData{group: group, tableOffset: tableOffset, phy: phy}
	s.mu.Unlock()
}

// checkTransaction is the broker's TransactionChecker: it asks a producer
// that publishes to the half's topic, on its Telemetry stream, with
// RecoverOrphanedTransactionCommand; the producer answers with
// EndTransaction (source SOURCE_SERVER_CHECK).
func (s *Server) checkTransaction(group string, half *message.Message) bool {
	id, ok := message.LookupProperty(half.Properties, message.PropertyTransactionID)
	if !ok {
		id, _ = message.LookupProperty(half.Properties, message.PropertyUniqClientMessageIDKeyIndex)
	}
	s.mu.Lock()
	var target *client
	for _, c := range s.clients {
		if c.stream == nil || c.settings.GetPublishing() == nil {
			continue
		}
		for _, t := range c.settings.GetPublishing().Topics {
			if t.GetName() == half.Topic {
				target = c
			}
		}
	}
	if target != nil {
		s.txs[id] = txData{group: group, tableOffset: half.QueueOffset, phy: half.PhysicalOffset}
	}
	s.mu.Unlock()
	if target == nil {
		return false
	}
	err := target.send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2.RecoverOrphanedTransactionCommand{
			Message: toProto(half, nil, 0, 0), TransactionId: id}}})
	if err != nil {
		s.log.Debug("asking a producer about a transaction failed", "client", target.id, "err", err)
		return false
	}
	return true
}

// EndTransaction commits or rolls back a transaction's half message.
func (s *Server) EndTransaction(ctx context.Context, req *v2.EndTransactionRequest) (*v2.EndTransactionResponse, error) {
	err := func() error {
		topic, err := validateTopic(req.Topic)
		if err != nil {
			return err
		}
		if req.Resolution == v2.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED {
			return nil // unknown: the check asks again later
		}
		s.mu.Lock()
		tx, ok := s.txs[req.TransactionId]
		s.mu.Unlock()
		if !ok || tx.group != topic {
			return fail(v2.Code_INVALID_TRANSACTION_ID, "no open transaction "+req.TransactionId+" on topic "+topic)
		}
		if err := s.b.EndTransaction(tx.group, tx.tableOffset, tx.phy, req.Resolution == v2.TransactionResolution_COMMIT); err != nil {
			return err
		}
		s.mu.Lock()
		delete(s.txs, req.TransactionId)
		s.mu.Unlock()
		return nil
	}()
	return &v2.EndTransactionResponse{Status: statusOf(err)}, nil
}
