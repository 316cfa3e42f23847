package broker

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
	"github.com/rocketstore/rocketstore/store"
)

// A store that is not writable answers SERVICE_NOT_AVAILABLE with a remark
// naming the cause, as RocketMQ does; a put whose flush failed says the
// disk write failed (not FLUSH_DISK_TIMEOUT).
func TestPutError_StoreNotWritable(t *testing.T) {
	notWritable := func(cause error) error {
		return fmt.Errorf("store: put to T: %w: %w", store.ErrNotWritable, cause)
	}
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		remark string
	}{
		{"disk full", notWritable(fmt.Errorf("the disk is 95%% full: %w", store.ErrDiskFull)), remoting.ServiceNotAvailable, "disk is 95% full"},
		{"dispatch stopped", notWritable(fmt.Errorf("dispatch stopped at CommitLog offset 0: %w", store.ErrDispatchStopped)),
			remoting.ServiceNotAvailable, "dispatch stopped"},
		{"refused after a failed flush", notWritable(fmt.Errorf("a write to disk failed: %w: %w", store.ErrFlushFailed, syscall.EIO)),
			remoting.ServiceNotAvailable, "write to disk failed"},
		{"this put's flush failed", fmt.Errorf("store: put to T: written, but %w: %w", store.ErrFlushFailed, syscall.EIO),
			remoting.SystemError, "disk write failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := putError(tc.err)
			require.Equal(t, tc.code, resp.Code)
			require.Contains(t, resp.Remark, tc.remark)
		})
	}
}
