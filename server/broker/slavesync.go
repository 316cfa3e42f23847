package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/internal/fastjson"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// A slave's duties besides the CommitLog (RocketMQ's SlaveSynchronize):
// every SlaveSyncInterval, and at once when it learns its master, it takes
// the master's topic configs, consumer offsets, delay offsets and
// subscription groups over GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET,
// GET_ALL_DELAY_OFFSET and GET_ALL_SUBSCRIPTIONGROUP_CONFIG, and keeps
// them, so that a consumer that moves to the slave resumes where it was.

// extCommitForward marks the UPDATE_CONSUMER_OFFSET by which a slave hands
// its master an offset a client committed to the slave while the master
// was away: the master takes it only if it is ahead of its own. It is not
// a RocketMQ field; an Apache master ignores it and takes the offset.
const extCommitForward = "commitForward"

// slaveSyncTimeout bounds one request to the master (BrokerOuterAPI's 3 s).
const slaveSyncTimeout = 3 * time.Second

// setMasterAddr changes the master's address a slave takes its tables
// from ("" while the name server knows no master), and starts a sync at
// once when there is a new one.
func (b *Broker) setMasterAddr(addr string) {
	if b.opts.MasterAddr != "" {
		addr = b.opts.MasterAddr
	}
	if old, _ := b.masterAddr.Swap(addr).(string); old == addr {
		return
	}
	b.log.Info("the master to take topics, offsets and groups from", "master", addr)
	if addr != "" {
		select {
		case b.syncNow <- struct{}{}:
		default:
		}
	}
}

// master returns the master's address, "" if none is known.
func (b *Broker) master() string {
	addr, _ := b.masterAddr.Load().(string)
	return addr
}

// slaveSyncLoop syncs from the master at once, every SlaveSyncInterval,
// and when a new master is learnt, until Shutdown.
func (b *Broker) slaveSyncLoop() {
	t := time.NewTicker(b.opts.SlaveSyncInterval)
	defer t.Stop()
	for {
		if addr := b.master(); addr != "" && addr != b.addr {
			if err := b.syncAll(addr); err != nil {
				b.log.Warn("taking topics, offsets and groups from the master failed; retrying at the next interval",
					"master", addr, "err", err)
			}
		}
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.syncNow:
		}
	}
}

// syncAll is SlaveSynchronize.syncAll: each table on its own, so that one
// failing does not keep the others stale.
func (b *Broker) syncAll(addr string) error {
	return errors.Join(b.syncTopicConfig(addr), b.syncConsumerOffset(addr),
		b.syncDelayOffset(addr), b.syncSubscriptionGroupConfig(addr))
}

// askMaster sends a request without header to the master and returns the
// body of its SUCCESS answer.
func (b *Broker) askMaster(addr string, code int) ([]byte, error) {
	return b.invokeMaster(addr, remoting.NewRequest(code, nil, nil))
}

func (b *Broker) invokeMaster(addr string, req *remoting.Command) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), slaveSyncTimeout)
	defer cancel()
	resp, err := b.masterClient.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("request %d to %s: %w", req.Code, addr, err)
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("request %d to %s: code %d: %s", req.Code, addr, resp.Code, resp.Remark)
	}
	return resp.Body, nil
}

func (b *Broker) syncTopicConfig(addr string) error {
	changed, err := b.syncTable(addr, remoting.GetAllTopicConfig, "topic configs", b.topics.ReplaceFromMaster)
	if changed {
		b.triggerRegister() // the name server learns the slave's topics
	}
	return err
}

func (b *Broker) syncSubscriptionGroupConfig(addr string) error {
	_, err := b.syncTable(addr, remoting.GetAllSubscriptionGroupConfig, "subscription groups", b.groups.ReplaceFromMaster)
	return err
}

// syncTable asks the master for a table with code and replaces this one
// with it; it reports whether that changed anything.
func (b *Broker) syncTable(addr string, code int, what string, replace func([]byte) (bool, error)) (bool, error) {
	body, err := b.askMaster(addr, code)
	if err != nil {
		return false, err
	}
	changed, err := replace(body)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	if changed {
		b.log.Info("took the master's "+what, "master", addr)
	}
	return changed, nil
}

// syncConsumerOffset takes the master's offsets, keeping the newer ones
// clients committed here while the master was away, and hands those to
// the master.
func (b *Broker) syncConsumerOffset(addr string) error {
	body, err := b.askMaster(addr, remoting.GetAllConsumerOffset)
	if err != nil {
		return err
	}
	ahead, err := b.offsets.MergeFromMaster(body)
	if err != nil {
		return err
	}
	errs := []error{b.offsets.Persist()}
	for _, g := range ahead {
		for _, q := range slices.Sorted(maps.Keys(g.Offsets)) {
			req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{
				"consumerGroup": g.Group, "topic": g.Topic, "queueId": strconv.Itoa(int(q)),
				"commitOffset": strconv.FormatInt(g.Offsets[q], 10), extCommitForward: "true",
			}, nil)
			if _, err := b.invokeMaster(addr, req); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(ahead) > 0 {
		b.log.Info("handed the master offsets committed here while it was away", "master", addr, "groupTopics", len(ahead))
	}
	return errors.Join(errs...)
}

// syncDelayOffset takes the master's delay offsets (delayOffset.json).
func (b *Broker) syncDelayOffset(addr string) error {
	body, err := b.askMaster(addr, remoting.GetAllDelayOffset)
	if err != nil {
		return err
	}
	var f struct {
		OffsetTable map[int]int64 `json:"offsetTable"`
	}
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return fmt.Errorf("the master's delay offsets: %w", err)
	}
	return b.store.SetDelayOffsets(f.OffsetTable)
}

// processGetAllConsumerOffset handles GET_ALL_CONSUMER_OFFSET (43): the
// ConsumerOffsetSerializeWrapper a slave takes.
func (b *Broker) processGetAllConsumerOffset(context.Context, *remoting.Request) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = b.offsets.EncodeAllJSON()
	return resp
}

// processGetAllDelayOffset handles GET_ALL_DELAY_OFFSET (45): the
// schedule service's offsets as delayOffset.json holds them,
// {"offsetTable":{1:N,...}}.
func (b *Broker) processGetAllDelayOffset(context.Context, *remoting.Request) *remoting.Command {
	offs := b.store.DelayOffsets()
	w := fastjson.NewWriter(make([]byte, 0, 32+24*len(offs)), false)
	w.BeginObject()
	w.Key("offsetTable")
	w.BeginIntMap()
	for _, level := range slices.Sorted(maps.Keys(offs)) {
		w.IntKey(int64(level))
		w.Int(offs[level])
	}
	w.End()
	w.End()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = w.Bytes()
	return resp
}
