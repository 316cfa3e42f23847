package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/server/namesrv"
	"github.com/rocketstore/rocketstore/server/protocol"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Registration with the name servers (BrokerController.registerBrokerAll,
// registerIncrementBrokerData): the whole topic table at start and every
// RegisterInterval, and after a change only the topics that changed, with
// the table's new data version, so creating topics one by one does not
// send the whole table each time. A whole table goes compressed with
// CompressedRegister, and in parts of SplitRegistrationSize topics with
// EnableSplitRegistration.

// triggerRegister asks the register loop to register at once: topics,
// the ones that changed; none, the whole table (after a deletion or a
// change of the broker's own permission).
func (b *Broker) triggerRegister(topics ...string) {
	b.regMu.Lock()
	if len(topics) == 0 {
		b.regFull = true
	} else {
		if b.regTopics == nil {
			b.regTopics = make(map[string]struct{}, len(topics))
		}
		for _, t := range topics {
			b.regTopics[t] = struct{}{}
		}
	}
	b.regMu.Unlock()
	select {
	case b.registerNow <- struct{}{}:
	default:
	}
}

// registerLoop registers with every name server at start, every
// RegisterInterval, and when the topics change.
func (b *Broker) registerLoop() {
	if len(b.opts.NamesrvAddrs) == 0 {
		return
	}
	t := time.NewTicker(b.opts.RegisterInterval)
	defer t.Stop()
	for {
		full := false
		select {
		case <-b.stop:
			return
		case <-t.C:
			full = true
		case <-b.registerNow:
		}
		periodic := full
		b.regMu.Lock()
		topics := b.regTopics
		full = full || b.regFull || !b.registeredOnce
		changedNow := b.regFull || !b.registeredOnce || len(topics) > 0
		b.regTopics, b.regFull = nil, false
		b.regMu.Unlock()
		switch {
		case periodic && !changedNow && b.opts.DisableForceRegister && !b.opts.EnableSplitRegistration && !b.needRegister():
			// The name servers hold this data version: the query kept the broker alive.
		case full:
			b.registerAll()
		case len(topics) > 0:
			b.register(b.topics.WrapperOf(slices.Sorted(maps.Keys(topics))))
		}
	}
}

func (b *Broker) registration() *namesrv.BrokerRegistration {
	return b.registrationOf(b.topics.Wrapper())
}

func (b *Broker) registrationOf(w protocol.TopicConfigSerializeWrapper) *namesrv.BrokerRegistration {
	w.DataVersion = b.dataVersion(w.DataVersion)
	return &namesrv.BrokerRegistration{
		ClusterName:  b.opts.ClusterName,
		BrokerName:   b.opts.BrokerName,
		BrokerAddr:   b.addr,
		BrokerID:     b.opts.BrokerID,
		HAServerAddr: b.haAddr,
		Topics:       w,
		Compressed:   b.opts.CompressedRegister,
	}
}

// registerAll registers the whole topic table with every name server and
// reports whether one took the registration; the first success closes
// registered.
func (b *Broker) registerAll() bool {
	return b.register(b.topics.Wrapper())
}

// register sends w (in parts with EnableSplitRegistration) to every name
// server. A name server took it if it took every part.
func (b *Broker) register(w protocol.TopicConfigSerializeWrapper) bool {
	if b.nsClient == nil {
		c, err := remoting.NewClient(remoting.Options{Logger: b.log, BeforeRequest: b.signInner()})
		if err != nil {
			b.log.Error("name server client", "err", err)
			return false
		}
		b.nsClient = c
	}
	parts := []protocol.TopicConfigSerializeWrapper{w}
	if b.opts.EnableSplitRegistration && len(w.TopicConfigTable) >= b.opts.SplitRegistrationSize {
		parts = splitWrapper(w, b.opts.SplitRegistrationSize)
	}
	regs := make([]*namesrv.BrokerRegistration, len(parts))
	for i, p := range parts {
		regs[i] = b.registrationOf(p)
	}
	ok := 0
	var errs []error
	for _, addr := range b.opts.NamesrvAddrs {
		var err error
		var res namesrv.RegisterResult
		for _, reg := range regs {
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
			res, err = namesrv.Register(ctx, b.nsClient, addr, reg)
			cancel()
			if err != nil {
				break
			}
		}
		if err != nil {
			b.log.Warn("registering with the name server failed", "namesrv", addr, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		ok++
		b.learnMaster(res)
	}
	b.noteRegistration(ok, errs)
	if ok > 0 && !b.registeredOnce {
		b.registeredOnce = true
		close(b.registered)
	}
	return ok > 0
}

// needRegister asks every name server for the data version it holds of
// this broker (BrokerOuterAPI.needRegister): true if one differs, does
// not know the broker, or does not answer.
func (b *Broker) needRegister() bool {
	if b.nsClient == nil {
		return true
	}
	v := b.dataVersion(b.topics.DataVersion())
	body := fmt.Appendf(nil, `{"counter":%d,"stateVersion":%d,"timestamp":%d}`, v.Counter, v.StateVersion, v.Timestamp)
	ext := map[string]string{"brokerAddr": b.addr, "brokerName": b.opts.BrokerName,
		"brokerId": strconv.FormatInt(b.opts.BrokerID, 10), "clusterName": b.opts.ClusterName}
	for _, addr := range b.opts.NamesrvAddrs {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		resp, err := b.nsClient.Invoke(ctx, addr, remoting.NewRequest(remoting.QueryDataVersion, ext, body))
		cancel()
		if err != nil || resp.Code != remoting.Success || resp.Ext("changed") != "false" {
			return true
		}
		var held protocol.DataVersion
		if len(resp.Body) > 0 && (json.Unmarshal(resp.Body, &held) != nil || held != v) {
			return true
		}
	}
	return false
}

// dataVersion is v as registered: with StateVersion when one is set.
func (b *Broker) dataVersion(v protocol.DataVersion) protocol.DataVersion {
	if b.opts.StateVersion != 0 {
		v.StateVersion = b.opts.StateVersion
	}
	return v
}

// splitWrapper cuts w into parts of size topics (by name), each with w's
// data version, as registerBrokerAll does with enableSplitRegistration.
func splitWrapper(w protocol.TopicConfigSerializeWrapper, size int) []protocol.TopicConfigSerializeWrapper {
	names := slices.Sorted(maps.Keys(w.TopicConfigTable))
	var parts []protocol.TopicConfigSerializeWrapper
	for chunk := range slices.Chunk(names, size) {
		t := make(map[string]protocol.TopicConfig, len(chunk))
		for _, n := range chunk {
			t[n] = w.TopicConfigTable[n]
		}
		parts = append(parts, protocol.TopicConfigSerializeWrapper{DataVersion: w.DataVersion, TopicConfigTable: t})
	}
	return parts
}

// metaFlushInterval is how often metaFlushLoop writes the configs made
// without a wait for them (groups and retry topics of heartbeats).
const metaFlushInterval = time.Second

// metaFlushLoop makes the lazily created groups and topics durable every
// metaFlushInterval (when there are any: a flush with nothing queued
// writes nothing).
func (b *Broker) metaFlushLoop() {
	t := time.NewTicker(metaFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			if err := b.groups.Flush(); err != nil {
				b.log.Error("writing subscription groups failed", "err", err)
			}
			if err := b.topics.Flush(); err != nil {
				b.log.Error("writing topics failed", "err", err)
			}
		}
	}
}
