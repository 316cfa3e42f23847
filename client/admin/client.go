package admin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/message"
	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Options configure a Client.
type Options struct {
	// NamesrvAddrs are the name servers (host:port), tried in order.
	NamesrvAddrs []string
	// Timeout bounds each call; 0 means 5 s (the admin tools' timeoutMillis).
	Timeout time.Duration
	// Remoting configures the connections (dial timeout, logger, ...).
	Remoting remoting.Options
	// AccessKey and SecretKey, when set, sign every request as RocketMQ's
	// ACL clients do (AclClientRPCHook): a broker with access control acts
	// with that user's rights.
	AccessKey, SecretKey string
}

// Client talks to name servers and brokers. Its methods are safe for
// concurrent use.
type Client struct {
	rc      *remoting.Client
	ns      []string
	timeout time.Duration
	ids     *message.UniqIDGenerator
}

// New returns a client; it connects on first use.
func New(opts Options) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Remoting.DialTimeout <= 0 {
		opts.Remoting.DialTimeout = 3 * time.Second
	}
	if ak, sk := opts.AccessKey, opts.SecretKey; ak != "" {
		before := opts.Remoting.BeforeRequest
		opts.Remoting.BeforeRequest = func(cmd *remoting.Command) {
			if before != nil {
				before(cmd)
			}
			signCommand(cmd, ak, sk)
		}
	}
	rc, err := remoting.NewClient(opts.Remoting)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	return &Client{
		rc:      rc,
		ns:      opts.NamesrvAddrs,
		timeout: opts.Timeout,
		ids:     message.NewUniqIDGenerator(netip.AddrFrom4([4]byte{127, 0, 0, 1}), int16(os.Getpid()), 0),
	}, nil
}

// signCommand signs cmd as a Java client of cmd's version does. Clients
// up to 4.9.3 (the version this client sends is one of them) add
// QUERY_MESSAGE's _UNIQUE_KEY_QUERY after the RPC hook has signed, so it
// is not signed, and brokers leave it out of the check for them.
func signCommand(cmd *remoting.Command, ak, sk string) {
	const uniqueKeyQuery, v4_9_3 = "_UNIQUE_KEY_QUERY", 581
	v, unsigned := cmd.ExtFields[uniqueKeyQuery]
	unsigned = unsigned && cmd.Version <= v4_9_3
	if unsigned {
		delete(cmd.ExtFields, uniqueKeyQuery)
	}
	auth.SignCommand(cmd, ak, sk)
	if unsigned {
		cmd.SetExt(uniqueKeyQuery, v)
	}
}

// Close closes every connection.
func (c *Client) Close() error { return c.rc.Close() }

// UnreachableError: a name server or broker did not answer (connect
// refused, timed out, connection lost).
type UnreachableError struct {
	Role string // "name server" or "broker"
	Addr string
	Err  error
}

// Error says which server could not be reached and why, in one line.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the %s at %s: %v", e.Role, e.Addr, rootCause(e.Err))
}

// Unwrap returns the transport error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// rootCause is the innermost error of a chain of single wraps: the
// syscall's words ("connection refused") rather than every layer's prefix.
func rootCause(err error) error {
	if errors.Is(err, remoting.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer in time")
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// ResponseError is an answer with a code other than SUCCESS.
type ResponseError struct {
	Addr   string
	Code   int // RocketMQ's ResponseCode
	Remark string
}

// Error gives the server, code and remark.
func (e *ResponseError) Error() string {
	remark := e.Remark
	if remark == "" {
		remark = "no remark"
	}
	return fmt.Sprintf("%s answered code %d (%s): %s", e.Addr, e.Code, codeName(e.Code), remark)
}

func codeName(code int) string {
	switch code {
	case remoting.SystemError:
		return "SYSTEM_ERROR"
	case remoting.SystemBusy:
		return "SYSTEM_BUSY"
	case remoting.RequestCodeNotSupported:
		return "REQUEST_CODE_NOT_SUPPORTED"
	case remoting.TopicNotExist:
		return "TOPIC_NOT_EXIST"
	case remoting.QueryNotFound:
		return "QUERY_NOT_FOUND"
	case remoting.SubscriptionNotExist:
		return "SUBSCRIPTION_NOT_EXIST"
	case remoting.SubscriptionGroupNotExist:
		return "SUBSCRIPTION_GROUP_NOT_EXIST"
	case remoting.ConsumerNotOnline:
		return "CONSUMER_NOT_ONLINE"
	case remoting.NoPermission:
		return "NO_PERMISSION"
	case remoting.ServiceNotAvailable:
		return "SERVICE_NOT_AVAILABLE"
	}
	return "code " + fmt.Sprint(code)
}

// IsCode reports whether err is a ResponseError with the given code.
func IsCode(err error, code int) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == code
}

// invoke sends req to addr and returns the answer, whatever its code.
func (c *Client) invoke(ctx context.Context, role, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, &UnreachableError{Role: role, Addr: addr, Err: err}
	}
	return resp, nil
}

// call is invoke that turns an answer other than SUCCESS into a
// ResponseError.
func (c *Client) call(ctx context.Context, role, addr string, req *remoting.Command) (*remoting.Command, error) {
	resp, err := c.invoke(ctx, role, addr, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return resp, &ResponseError{Addr: addr, Code: resp.Code, Remark: resp.Remark}
	}
	return resp, nil
}

// broker calls a broker.
func (c *Client) broker(ctx context.Context, addr string, code int, ext map[string]string, body []byte) (*remoting.Command, error) {
	return c.call(ctx, "broker", addr, remoting.NewRequest(code, ext, body))
}

// namesrv calls the first name server that answers.
func (c *Client) namesrv(ctx context.Context, code int, ext map[string]string) (*remoting.Command, error) {
	if len(c.ns) == 0 {
		return nil, errors.New("no name server given: use -n host:port or set NAMESRV_ADDR")
	}
	var err error
	for _, addr := range c.ns {
		var resp *remoting.Command
		resp, err = c.call(ctx, "name server", addr, remoting.NewRequest(code, ext, nil))
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			return resp, err
		}
	}
	return nil, err
}

// ParseNamesrvAddrs splits a name server list as RocketMQ writes it:
// addresses separated by ';' (commas and spaces are accepted too).
func ParseNamesrvAddrs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}
