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
// calls waiting for answers fail with ErrConnClosed. cmd's body is not
// referenced after send returns.
func (c *Conn) send(cmd *Command, deadline time.Time, cork bool) error {
	c.wmu.Lock()
	if c.isClosed() {
		c.wmu.Unlock()
		return ErrConnClosed
	}
	start := len(c.pend)
	buf, err := cmd.appendHead(c.pend, len(cmd.Body))
	if err != nil {
		c.wmu.Unlock()
		return err
	}
	queue := c.writing || cork
	var body []byte
	if queue || len(cmd.Body) <= smallBody {
		buf = append(buf, cmd.Body...)
	} else {
		body = cmd.Body
	}
	c.pend = buf
	c.queued.Add(int64(len(buf) - start + len(body)))
	c.pendDeadline = sooner(c.pendDeadline, deadline)
	if queue {
		c.wmu.Unlock()
		return nil
	}
	out, d := c.takeLocked()
	c.wmu.Unlock()
	err = c.writeOut(out, body, d)
	c.drain(out, err)
	return err
}

// flush writes the queued frames, unless another goroutine is writing
// (which writes them).
func (c *Conn) flush() { c.flushAs(false) }

// readerFlush is flush by the reading goroutine, which counts as paused
// while it writes: it does not read meanwhile.
func (c *Conn) readerFlush() { c.flushAs(true) }

func (c *Conn) flushAs(reader bool) {
	c.wmu.Lock()
	if c.writing || len(c.pend) == 0 {
		c.wmu.Unlock()
		return
	}
	out, d := c.takeLocked()
	c.wmu.Unlock()
	if reader {
		c.paused.Store(true)
		defer c.paused.Store(false)
	}
	c.drain(out, c.writeOut(out, nil, d))
}

// takeLocked makes the caller the writer and hands it the queued frames
// and their deadline.
func (c *Conn) takeLocked() ([]byte, time.Time) {
	c.writing = true
	out, d := c.pend, c.pendDeadline
	c.pend, c.spare, c.pendDeadline = c.spare[:0], nil, time.Time{}
	return out, d
}

// drain, called by the writer after writing out with result err, writes
// what was queued meanwhile until nothing is left, then stops being the
// writer.
func (c *Conn) drain(out []byte, err error) {
	for {
		c.wmu.Lock()
		if cap(out) <= maxSpare {
			c.spare = out[:0]
		}
		if err != nil || len(c.pend) == 0 {
			c.pend, c.pendDeadline = c.pend[:0], time.Time{} // after an error the connection is closed
			c.writing = false
			c.wmu.Unlock()
			return
		}
		var d time.Time
		out, d = c.takeLocked()
		c.wmu.Unlock()
		err = c.writeOut(out, nil, d)
	}
}

// writeOut writes out, then body if not nil, in one writev. Only the
// writer calls it. A peer that takes none of the bytes for WriteTimeout
// is not reading: the connection is closed, with that reason logged.
func (c *Conn) writeOut(out, body []byte, deadline time.Time) error {
	n := len(out) + len(body)
	c.bufArr = [2][]byte{out, body}
	c.bufs = c.bufArr[:1]
	if body != nil {
		c.bufs = c.bufArr[:2]
	}
	err := c.writeBuffers(&c.bufs, deadline)
	c.bufArr = [2][]byte{}
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
