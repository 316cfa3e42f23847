package remoting

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Writing frames: one goroutine at a time writes to the connection. A
// frame sent while another goroutine writes is copied behind the frames
// that goroutine writes, and it writes them too before it stops: frames
// that are ready at the same time leave in one write, in the order they
// were sent, and nobody waits for a writer goroutine to wake up. A frame
// sent with cork waits for the next write or flush (the reading goroutine
// corks the answers of inline processors while more requests are read).

// ErrPeerNotReading is why a connection closes whose peer took none of
// the bytes written to it for the write timeout.
var ErrPeerNotReading = errors.New("remoting: peer not reading")

// smallBody is the largest body copied behind the header into one write;
// larger bodies go out with writev, uncopied, unless they must be queued.
// BodyParts are never copied.
const smallBody = 4 << 10

// maxSpare is the largest write buffer kept for the next write.
const maxSpare = 64 << 10

// write sends one frame. deadline, when not zero and sooner than the write
// timeout, bounds the write.
func (c *Conn) write(cmd *Command, deadline time.Time) error {
	return c.send(cmd, deadline, false)
}

// send writes cmd's frame together with the frames queued before it, or
// queues it behind the goroutine writing now (or, with cork, for the next
// write or flush). A failed or timed-out write leaves the stream broken,
// so it closes the connection; the frames queued then are lost, and the
// calls waiting for answers fail with ErrConnClosed. cmd.Body is not
// referenced after send returns; cmd.BodyParts are, until cmd.Release is
// called (once the frame is written or dropped).
func (c *Conn) send(cmd *Command, deadline time.Time, cork bool) error {
	c.wmu.Lock()
	if c.isClosed() {
		c.wmu.Unlock()
		cmd.release()
		return ErrConnClosed
	}
	start := len(c.pend)
	bodyLen := cmd.bodyLen()
	buf, err := cmd.appendHead(c.pend, bodyLen)
	if err != nil {
		c.wmu.Unlock()
		cmd.release()
		return err
	}
	frameLen := len(buf) - start + bodyLen
	queue := c.writing || cork
	switch {
	case cmd.BodyParts != nil:
		c.sealLocked(buf)
		for _, p := range cmd.BodyParts {
			if len(p) > 0 {
				c.segs = append(c.segs, p)
			}
		}
		if cmd.Release != nil {
			c.rels = append(c.rels, cmd.Release)
		}
	case !queue && len(cmd.Body) > smallBody: // written before send returns
		c.sealLocked(buf)
		c.segs = append(c.segs, cmd.Body)
	default:
		buf = append(buf, cmd.Body...)
		c.pend = buf
	}
	c.queued.Add(int64(frameLen))
	c.pendDeadline = sooner(c.pendDeadline, deadline)
	if queue {
		c.wmu.Unlock()
		return nil
	}
	c.takeLocked()
	c.wmu.Unlock()
	err = c.writeOut()
	c.drain(err)
	return err
}

// sendSoon queues cmd's frame and returns without writing: the goroutine
// writing now writes it, or else a goroutine started here (one at a time
// for the connection, which writes whatever is queued until nothing is).
func (c *Conn) sendSoon(cmd *Command) error {
	if err := c.send(cmd, time.Time{}, true); err != nil {
		return err
	}
	c.wmu.Lock()
	if c.writing || c.flusher {
		c.wmu.Unlock()
		return nil
	}
	c.flusher = true
	c.wmu.Unlock()
	c.ep.goroutines.add()
	go func() {
		defer c.ep.goroutines.done()
		for {
			c.flush()
			c.wmu.Lock()
			if c.writing || len(c.pend) == 0 && len(c.segs) == 0 || c.isClosed() {
				// A writer took over (it writes the queue before it
				// stops), or nothing is left.
				c.flusher = false
				c.wmu.Unlock()
				return
			}
			c.wmu.Unlock()
		}
	}()
	return nil
}

// sealLocked ends the queued bytes at buf (the pend buffer with a head
// just appended) so that uncopied slices can follow them.
func (c *Conn) sealLocked(buf []byte) {
	if len(buf) > c.sealed {
		c.segs = append(c.segs, buf[c.sealed:len(buf):len(buf)])
	}
	c.pend, c.sealed = buf, len(buf)
}

// flush writes the queued frames, unless another goroutine is writing
// (which writes them).
func (c *Conn) flush() { c.flushAs(false) }

// readerFlush is flush by the reading goroutine, which counts as paused
// while it writes: it does not read meanwhile.
func (c *Conn) readerFlush() { c.flushAs(true) }

func (c *Conn) flushAs(reader bool) {
	c.wmu.Lock()
	if c.writing || len(c.pend) == 0 && len(c.segs) == 0 {
		c.wmu.Unlock()
		return
	}
	c.takeLocked()
	c.wmu.Unlock()
	if reader {
		c.paused.Store(true)
		defer c.paused.Store(false)
	}
	c.drain(c.writeOut())
}

// takeLocked makes the caller the writer and hands it the queued frames
// (into the writer's wbufs, wrels, wout and wdeadline).
func (c *Conn) takeLocked() {
	c.writing = true
	c.wbufs = append(c.wbufs[:0], c.segs...)
	if len(c.pend) > c.sealed {
		c.wbufs = append(c.wbufs, c.pend[c.sealed:])
	}
	c.wrels = append(c.wrels[:0], c.rels...)
	c.wout, c.wdeadline = c.pend, c.pendDeadline
	clear(c.segs)
	clear(c.rels)
	c.segs, c.rels = c.segs[:0], c.rels[:0]
	c.pend, c.spare, c.sealed, c.pendDeadline = c.spare[:0], nil, 0, time.Time{}
}

// drain, called by the writer after a write with result err, writes what
// was queued meanwhile until nothing is left, then stops being the writer.
// After an error (the connection is closed) what is queued is dropped.
func (c *Conn) drain(err error) {
	for {
		c.wmu.Lock()
		if cap(c.wout) <= maxSpare {
			c.spare = c.wout[:0]
		}
		c.wout = nil
		if err != nil || len(c.pend) == 0 && len(c.segs) == 0 {
			var dropped []func()
			if err != nil {
				dropped = c.dropQueuedLocked()
			}
			c.writing = false
			c.wmu.Unlock()
			for _, r := range dropped {
				r()
			}
			return
		}
		c.takeLocked()
		c.wmu.Unlock()
		err = c.writeOut()
	}
}

// dropQueuedLocked forgets the queued frames and returns the releases of
// their uncopied bodies.
func (c *Conn) dropQueuedLocked() []func() {
	rels := append([]func(){}, c.rels...)
	clear(c.segs)
	clear(c.rels)
	c.segs, c.rels = c.segs[:0], c.rels[:0]
	c.pend, c.sealed, c.pendDeadline = c.pend[:0], 0, time.Time{}
	return rels
}

// dropQueued, at close, releases the frames queued with no writer to
// write them (a writer drops them itself when its next write fails).
func (c *Conn) dropQueued() {
	c.wmu.Lock()
	if c.writing {
		c.wmu.Unlock()
		return
	}
	rels := c.dropQueuedLocked()
	c.wmu.Unlock()
	for _, r := range rels {
		r()
	}
}

// writeOut writes the writer's wbufs in one writev, then calls the
// releases of the uncopied bodies among them. Only the writer calls it.
func (c *Conn) writeOut() error {
	n := 0
	for _, b := range c.wbufs {
		n += len(b)
	}
	c.wv = c.wbufs // writeBuffers consumes its copy of the slice header
	err := c.writeBuffers(&c.wv, c.wdeadline)
	c.wv = nil
	clear(c.wbufs)
	c.wbufs = c.wbufs[:0]
	for i, r := range c.wrels {
		r()
		c.wrels[i] = nil
	}
	c.wrels = c.wrels[:0]
	if err != nil {
		return err
	}
	c.written(n)
	return nil
}

// writeBuffers writes all of bufs (consuming it), renewing the write
// timeout whenever the peer takes some bytes; deadline, when not zero, is
// a limit of its own. On failure it closes the connection.
func (c *Conn) writeBuffers(bufs *net.Buffers, deadline time.Time) error {
	wt := c.ep.opts.WriteTimeout
	for {
		d := deadline
		if wt > 0 {
			d = sooner(d, time.Now().Add(wt))
		}
		if err := c.nc.SetWriteDeadline(d); err != nil {
			c.closeWith(err)
			return fmt.Errorf("remoting: write to %s: %w", c.RemoteAddr(), err)
		}
		var n int64
		var err error
		if len(*bufs) == 1 {
			var m int
			m, err = c.nc.Write((*bufs)[0])
			n = int64(m)
			(*bufs)[0] = (*bufs)[0][m:]
			if err == nil {
				*bufs = (*bufs)[:0]
			}
		} else {
			n, err = bufs.WriteTo(c.nc) // consumes what it wrote
		}
		if err == nil {
			return nil
		}
		timedOut := errors.Is(err, os.ErrDeadlineExceeded)
		if timedOut && n > 0 && (deadline.IsZero() || time.Now().Before(deadline)) {
			continue // the peer reads, slowly: give it another WriteTimeout
		}
		if timedOut && (deadline.IsZero() || time.Now().Before(deadline)) {
			c.ep.log.Warn("remoting: the peer has read nothing for the write timeout, closing the connection",
				"conn", c, "writeTimeout", wt, "queuedBytes", c.queued.Load())
			err = fmt.Errorf("%w: the peer read nothing for %v", ErrPeerNotReading, wt)
		} else {
			c.ep.log.Warn("remoting: write failed, closing the connection", "conn", c, "err", err)
		}
		c.closeWith(err)
		return fmt.Errorf("remoting: write to %s: %w", c.RemoteAddr(), err)
	}
}

// sooner returns the sooner of two deadlines; zero means none.
func sooner(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
