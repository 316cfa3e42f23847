package remoting

import "time"

// A connection may have only so much waiting on it, whatever its peer
// does (RocketMQ sets Netty's write-buffer water marks and turns off
// auto-read while a channel is not writable). Two things are bounded:
//
//   - the bytes of frames sent and not yet written (queued): past
//     WriteBufferHighWaterMark the connection is not read until they are
//     down to WriteBufferLowWaterMark;
//   - the requests read and not yet answered (owed): past
//     MaxPendingReplies it is not read until three quarters remain.
//
// The reading goroutine checks before each frame it reads, so a peer that
// pipelines requests without reading the answers is held at the bounds: its
// requests wait in the kernel's socket buffers, its own writes block. A
// peer that reads nothing for the write timeout is closed (writeBuffers).

// overLimits reports whether the reader should stop reading.
func (c *Conn) overLimits() bool {
	o := &c.ep.opts
	return c.queued.Load() > int64(o.WriteBufferHighWaterMark) || c.owed.Load() >= int64(o.MaxPendingReplies)
}

// belowResumeMarks reports whether a paused reader may read again.
func (c *Conn) belowResumeMarks() bool {
	return c.queued.Load() <= int64(c.ep.opts.WriteBufferLowWaterMark) && c.owed.Load() <= c.resumeOwed()
}

func (c *Conn) resumeOwed() int64 { return int64(c.ep.opts.MaxPendingReplies) * 3 / 4 }

// waitBelowLimits writes the queued answers, then waits until the
// connection is below its resume marks, or closes (ErrConnClosed).
func (c *Conn) waitBelowLimits() error {
	c.readerFlush()
	start := time.Now()
	logged := false
	for {
		c.paused.Store(true)
		if c.belowResumeMarks() { // after setting paused: a wake-up is not missed
			c.paused.Store(false)
			if logged {
				c.ep.log.Debug("remoting: reading resumed", "conn", c, "paused", time.Since(start))
			}
			return nil
		}
		if !logged {
			c.ep.log.Debug("remoting: connection over its bounds, not read until they drain", "conn", c,
				"queuedBytes", c.queued.Load(), "pendingReplies", c.owed.Load())
			logged = true
		}
		select {
		case <-c.resumed:
		case <-c.done:
			c.paused.Store(false)
			return ErrConnClosed
		}
	}
}

// written accounts for n bytes written and wakes a paused reader when
// they bring the queue down to the low water mark.
func (c *Conn) written(n int) {
	if c.queued.Add(-int64(n)) <= int64(c.ep.opts.WriteBufferLowWaterMark) && c.paused.Load() {
		c.wake()
	}
}

func (c *Conn) wake() {
	select {
	case c.resumed <- struct{}{}:
	default:
	}
}
