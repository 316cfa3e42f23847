package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/store"
)

// openPty opens a pseudo-terminal pair: the master, read by the test, and
// the slave, given to the command as its terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	fd := int(m.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)) // unlockpt
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)                    // ptsname
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}))
	return m, s
}

// runOnPty runs mqadmin with its stdin, stdout and stderr on a
// pseudo-terminal and returns everything it wrote there.
func runOnPty(t *testing.T, args ...string) string {
	t.Helper()
	master, slave := openPty(t)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mqadminPath(t), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	require.NoError(t, cmd.Start())
	slave.Close() // the child holds it now: reads end (EIO) when it exits
	var out bytes.Buffer
	read := make(chan error, 1)
	go func() {
		_, err := out.ReadFrom(master)
		read <- err
	}()
	require.NoError(t, cmd.Wait(), "mqadmin %v", args)
	select {
	case err := <-read:
		if err != nil && !errors.Is(err, syscall.EIO) {
			require.NoError(t, err)
		}
	case <-ctx.Done():
		t.Fatal("the terminal's output did not end")
	}
	return out.String()
}

func TestMQAdmin_ProgressBarOnlyOnATerminal(t *testing.T) {
	s := startSystem(t, store.Options{})
	topic := unique("AdminBar")
	s.mqOK("updateTopic", "-b", s.b.Addr(), "-t", topic, "-r", "2", "-w", "2")
	s.waitRouteQueues(topic, 2)

	out := runOnPty(t, "sendMessage", "-n", s.nsAddr, "--timeout", "30s", "-t", topic, "-p", "tick", "--count", "200")
	require.Contains(t, out, "\rsending [", "no progress bar on a terminal:\n%q", out)
	require.Contains(t, out, "] 200/200 ")
	require.Contains(t, out, "Sent 200 messages.")

	out = runOnPty(t, "consumeMessage", "-n", s.nsAddr, "--timeout", "30s", "-t", topic, "-c", "150")
	require.Contains(t, out, "\rconsuming [", "no progress bar on a terminal:\n%q", out)
	require.Contains(t, out, "] 150/150 ")
	require.Contains(t, out, "Consumed 150 messages.")

	// Piped: the same commands draw no bar anywhere.
	for _, args := range [][]string{
		{"sendMessage", "-t", topic, "-p", "tick", "--count", "200"},
		{"consumeMessage", "-t", topic, "-c", "150"},
	} {
		r := s.mqadmin(args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout+r.stderr, "\r")
		require.NotContains(t, r.stdout+r.stderr, "[=")
		require.Empty(t, r.stderr)
	}
}
