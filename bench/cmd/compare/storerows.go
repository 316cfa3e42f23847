package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/store"
)

const group2 = "2. Store, in-process"

// msgMaker makes messages as store/bench_test.go does: a body of the given
// size with a tag, one key and a UNIQ_KEY that differ per message.
type msgMaker struct {
	m   message.Message
	ids *message.UniqIDGenerator
	n   int
}

func newMsgMaker(topic string, body int, queueID int32) *msgMaker {
	return &msgMaker{
		m: message.Message{
			Topic:         topic,
			QueueID:       queueID,
			Body:          make([]byte, body),
			BornTimestamp: time.Now().UnixMilli(),
			BornHost:      netip.MustParseAddrPort("127.0.0.1:40000"),
		},
		ids: message.NewUniqIDGenerator(netip.MustParseAddr("127.0.0.1"), int16(queueID), 7),
	}
}

func (p *msgMaker) next() *message.Message {
	p.n++
	b := make([]byte, 0, 128)
	b = append(b, message.PropertyTags...)
	b = append(b, message.NameValueSeparator)
	b = append(b, "TagA"...)
	b = append(b, message.PropertySeparator)
	b = append(b, message.PropertyKeys...)
	b = append(b, message.NameValueSeparator)
	b = append(b, "order-"...)
	b = strconv.AppendInt(b, int64(p.m.QueueID)<<32|int64(p.n), 10)
	b = append(b, message.PropertySeparator)
	b = append(b, message.PropertyUniqClientMessageIDKeyIndex...)
	b = append(b, message.NameValueSeparator)
	b = p.ids.AppendNext(b, time.Now())
	b = append(b, message.PropertySeparator)
	p.m.Properties = string(b)
	return &p.m
}

// storeSuite measures rocketstore's MessageStore in-process: puts with
// async flush (the timer stops when dispatch has caught up), puts with sync
// flush, and 32-message reads.
func storeSuite(c *config, r *results) error {
	dir := filepath.Join(c.dir, "rs-async")
	defer os.RemoveAll(dir)
	s, err := store.Open(dir, store.Options{CommitLogFileSize: c.commitLogFileSize})
	if err != nil {
		return err
	}
	defer s.Close()
	s.CommitLog().WaitAllocated()
	for _, size := range []int{128, 1024} {
		for _, writers := range []int{1, 16} {
			topic := fmt.Sprintf("Put%d_%d", size, writers)
			recSize, err := message.EncodedSize(newMsgMaker(topic, size, 0).next())
			if err != nil {
				return err
			}
			smp, err := drive(c, 0, writers, true, func(w int) (func() error, error) {
				p := newMsgMaker(topic, size, int32(w%8))
				return func() error {
					res, err := s.PutMessage(p.next())
					if err == nil && res.Status != store.PutOK {
						err = fmt.Errorf("put: status %v", res.Status)
					}
					return err
				}, nil
			}, func() error {
				if !s.WaitDispatched(time.Minute) {
					return fmt.Errorf("dispatch did not catch up in a minute")
				}
				return nil
			})
			if err != nil {
				return err
			}
			smp.bytes = smp.ops * float64(recSize)
			r.add(row{id: fmt.Sprintf("rs.put.%s.w%d", sizeName(size), writers), group: group2, system: "rocketstore",
				label: fmt.Sprintf("PutMessage %s, async flush, %d writer(s)", sizeName(size), writers)}, smp)
		}
	}
	if err := getRow(c, r, s); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	os.RemoveAll(dir)
	return syncRows(c, r)
}

func getRow(c *config, r *results, s *store.MessageStore) error {
	p := newMsgMaker("GetTopic", 1024, 0)
	for range c.getFill {
		if _, err := s.PutMessage(p.next()); err != nil {
			return err
		}
	}
	if !s.WaitDispatched(time.Minute) {
		return fmt.Errorf("dispatch did not catch up in a minute")
	}
	off := int64(0)
	var bytes int
	smp, err := drive(c, 0, 1, true, func(int) (func() error, error) {
		return func() error {
			g := s.GetMessage("g", "GetTopic", 0, off, 32, nil)
			if g.Status != store.Found || len(g.Messages) != 32 {
				return fmt.Errorf("get at %d: status %v, %d messages", off, g.Status, len(g.Messages))
			}
			bytes += g.BufferTotalSize
			off = g.NextBeginOffset
			if off+32 > int64(c.getFill) {
				off = 0
			}
			g.Release()
			return nil
		}, nil
	}, nil)
	if err != nil {
		return err
	}
	smp.bytes = float64(bytes)
	smp.ops *= 32
	r.add(row{id: "rs.get32", group: group2, system: "rocketstore", label: "GetMessage, 32-message batches of 1 KiB (latency per batch)"}, smp)
	return nil
}

func syncRows(c *config, r *results) error {
	dir := filepath.Join(c.dir, "rs-sync")
	defer os.RemoveAll(dir)
	s, err := store.Open(dir, store.Options{FlushDiskType: store.SyncFlush, CommitLogFileSize: c.commitLogFileSize})
	if err != nil {
		return err
	}
	defer s.Close()
	s.CommitLog().WaitAllocated()
	recSize, _ := message.EncodedSize(newMsgMaker("Sync", 1024, 0).next())
	for _, writers := range []int{1, 16, 64} {
		syncs := s.Syncs()
		topic := fmt.Sprintf("Sync%d", writers)
		smp, err := drive(c, 0, writers, true, func(w int) (func() error, error) {
			p := newMsgMaker(topic, 1024, int32(w%8))
			return func() error {
				res, err := s.PutMessage(p.next())
				if err == nil && res.Status != store.PutOK {
					err = fmt.Errorf("sync put: status %v", res.Status)
				}
				return err
			}, nil
		}, nil)
		if err != nil {
			return err
		}
		smp.bytes = smp.ops * float64(recSize)
		smp.extra = smp.ops / float64(max(1, s.Syncs()-syncs))
		r.add(row{id: fmt.Sprintf("rs.sync.w%d", writers), group: group2, system: "rocketstore", extraName: "msgs/fsync",
			label: fmt.Sprintf("PutMessage 1KiB, sync flush, %d writer(s)", writers)}, smp)
	}
	if !s.WaitDispatched(time.Minute) {
		return fmt.Errorf("dispatch did not catch up in a minute")
	}
	return s.Close()
}
