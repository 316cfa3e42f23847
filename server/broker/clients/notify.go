package clients

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// notifier sends NOTIFY_CONSUMER_IDS_CHANGED (Broker2Client.
// notifyConsumerIdsChanged). Each connection has a mailbox of groups to
// notify and at most one goroutine emptying it, so a slow client delays
// only its own notices, a burst of changes collapses into one notice per
// group, and a change made while a notice is being written gets a notice
// of its own afterwards (the client may have read the first one already).
type notifier struct {
	m *Manager

	mu     sync.Mutex // guards boxes and closed
	boxes  map[*remoting.Conn]map[string]struct{}
	closed bool
}

func (n *notifier) init(m *Manager) {
	n.m = m
	n.boxes = make(map[*remoting.Conn]map[string]struct{})
}

// close stops new notices; senders drop what they have not written.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

// notifyAll queues the notices; it never blocks on a client.
func (m *Manager) notifyAll(notices []notice) {
	for _, nt := range notices {
		for _, c := range nt.conns {
			m.notifier.post(c, nt.group)
		}
	}
}

// post puts group in conn's mailbox and starts its sender if none runs.
// A box exists in boxes exactly while its sender runs.
func (n *notifier) post(conn *remoting.Conn, group string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	box, running := n.boxes[conn]
	if !running {
		box = make(map[string]struct{})
		n.boxes[conn] = box
		n.m.wg.Go(func() { n.send(conn) })
	}
	box[group] = struct{}{}
}

// send empties conn's mailbox, writing one notice per group, until it
// stays empty or the Manager closes.
func (n *notifier) send(conn *remoting.Conn) {
	for {
		n.mu.Lock()
		box := n.boxes[conn]
		if len(box) == 0 || n.closed {
			delete(n.boxes, conn)
			n.mu.Unlock()
			return
		}
		n.boxes[conn] = make(map[string]struct{})
		n.mu.Unlock()

		groups := make([]string, 0, len(box))
		for g := range box {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		for _, g := range groups {
			n.write(conn, g)
		}
	}
}

func (n *notifier) write(conn *remoting.Conn, group string) {
	ctx, cancel := context.WithTimeout(context.Background(), n.m.opts.NotifyTimeout)
	defer cancel()
	req := remoting.NewRequest(remoting.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": group}, nil)
	err := conn.InvokeOneway(ctx, req)
	switch {
	case err == nil:
		n.m.log.Debug("notified consumer of group change", "group", group, "conn", conn)
	case errors.Is(err, remoting.ErrConnClosed):
		// It left; its own close is being handled.
	default:
		n.m.log.Warn("notifying a consumer of a group change failed", "group", group, "conn", conn, "err", err)
	}
}
