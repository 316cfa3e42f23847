package auth

import (
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"net"
	"net/netip"
	"strconv"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// Credentials are an AccessKey and SecretKey, what a client signs with
// (innerClientAuthenticationCredentials for the broker's own requests).
type Credentials struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// InitUser is initAuthenticationUser: a Super user made at first start.
type InitUser struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Config is the access control of a broker or name server, from Apache
// 5.3's broker.conf keys (see ApplyProperty).
type Config struct {
	AuthenticationEnabled bool
	AuthorizationEnabled  bool
	// AuthenticationWhitelist and AuthorizationWhitelist are request
	// codes that skip the step.
	AuthenticationWhitelist map[int]bool
	AuthorizationWhitelist  map[int]bool
	// InitUser, when set, is created as a Super user if absent.
	InitUser *InitUser
	// Inner signs the broker's own requests (registration, slave sync);
	// when set it is also created as a Super user if absent.
	Inner *Credentials
	// MigrateFromV1 imports V1File (a 4.x plain_acl.yml) at start.
	MigrateFromV1 bool
	V1File        string
}

// Enabled reports whether any check is on.
func (c *Config) Enabled() bool { return c.AuthenticationEnabled || c.AuthorizationEnabled }

// Refusal is a request refused by authentication or authorization:
// answered NO_PERMISSION with Remark, as upstream's
// AuthenticationException / AuthorizationException.
type Refusal struct{ Remark string }

func (r *Refusal) Error() string { return "auth: " + r.Remark }

func refuse(format string, args ...any) error { return &Refusal{Remark: fmt.Sprintf(format, args...)} }

// Check is one thing a request needs: one of Actions on Resource.
// SuperOnly marks a request only Super users may make (a code with no
// rule, config updates, AUTH_*): every Normal user is refused.
type Check struct {
	Resource  Resource
	Actions   Actions
	SuperOnly bool
}

// Authority decides requests with the users and ACLs of a Store. It is
// safe for concurrent use.
type Authority struct {
	cfg   Config
	store *Store
	log   *slog.Logger
}

// Open opens the store at path and makes the configured initial users
// (and imports a 4.x plain_acl.yml when asked). log may be nil.
func Open(path string, cfg Config, log *slog.Logger) (*Authority, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := OpenStore(path)
	if err != nil {
		return nil, err
	}
	a := &Authority{cfg: cfg, store: st, log: log}
	if u := cfg.InitUser; u != nil {
		if err := a.ensureSuper(u.Username, u.Password); err != nil {
			return nil, fmt.Errorf("auth: initAuthenticationUser: %w", err)
		}
	}
	if c := cfg.Inner; c != nil {
		if err := a.ensureSuper(c.AccessKey, c.SecretKey); err != nil {
			return nil, fmt.Errorf("auth: innerClientAuthenticationCredentials: %w", err)
		}
	}
	if cfg.MigrateFromV1 {
		if err := a.migrateV1(cfg.V1File); err != nil {
			return nil, err
		}
	}
	if cfg.AuthorizationEnabled && !cfg.AuthenticationEnabled {
		log.Warn("authorizationEnabled without authenticationEnabled: requests are authorized by an AccessKey nobody verified")
	}
	return a, nil
}

// ensureSuper creates a Super user if there is none of that name; an
// existing one is left as it is (upstream never updates it).
func (a *Authority) ensureSuper(name, password string) error {
	if _, ok := a.store.User(name); ok {
		return nil
	}
	err := a.store.CreateUser(User{Name: name, Password: password, Type: Super})
	if err == nil {
		a.log.Info("created a Super user", "username", name)
	}
	return err
}

// Store returns the users and ACLs.
func (a *Authority) Store() *Store { return a.store }

// Config returns the configuration.
func (a *Authority) Config() Config { return a.cfg }

// Authenticate verifies that the sender knows username's password:
// signature (base64) must equal base64(HMAC-SHA1(password, content)),
// compared in constant time. write writes the content to the hash.
func (a *Authority) Authenticate(username string, signature []byte, write func(hash.Hash)) error {
	acc, err := a.lookup(username, "User:%s is not found.")
	if err != nil {
		return err
	}
	h := acc.mac()
	write(h)
	var sum [sha1.Size]byte
	var enc [28]byte // base64 of 20 bytes
	base64.StdEncoding.Encode(enc[:], h.Sum(sum[:0]))
	acc.putMAC(h)
	if subtle.ConstantTimeCompare(enc[:], signature) != 1 {
		return refuse("check signature failed.")
	}
	return nil
}

// Authorize decides whether username may do what checks say from ip:
// Super users may do everything; a Normal user needs, for each check, an
// entry of its ACL that applies and allows. A missing or unknown user is
// refused.
func (a *Authority) Authorize(username string, checks []Check, ip netip.Addr) error {
	acc, err := a.lookup(username, "User:%s not found.") // upstream's words differ here
	if err != nil {
		return err
	}
	if acc.Type == Super {
		return nil
	}
	acl := a.store.acl(username)
	for _, c := range checks {
		if c.SuperOnly {
			return refuse("User:%s has no permission to access %s from %s, it is for Super users only.", username, c.Resource, ipString(ip))
		}
		if acl == nil {
			return refuse("User:%s has no permission to access %s from %s, no matched policies.", username, c.Resource, ipString(ip))
		}
		e, ok := acl.Decide(c.Resource, c.Actions, ip)
		if !ok {
			return refuse("User:%s has no permission to access %s from %s, no matched policies.", username, c.Resource, ipString(ip))
		}
		if e.Decision == Deny {
			return refuse("User:%s has no permission to access %s from %s, the decision is deny.", username, c.Resource, ipString(ip))
		}
	}
	return nil
}

// lookup returns the enabled account of username, or the refusal:
// notFound formats the remark for an unknown name.
func (a *Authority) lookup(username, notFound string) (*account, error) {
	if username == "" {
		return nil, refuse("username cannot be null.")
	}
	acc := a.store.account(username)
	if acc == nil {
		return nil, refuse(notFound, username)
	}
	if acc.Disabled {
		return nil, refuse("User:%s is disabled.", username)
	}
	return acc, nil
}

func ipString(ip netip.Addr) string {
	if !ip.IsValid() {
		return "unknown"
	}
	return ip.String()
}

// IsSuper reports whether username is an enabled Super user.
func (a *Authority) IsSuper(username string) bool {
	acc := a.store.account(username)
	return acc != nil && !acc.Disabled && acc.Type == Super
}

// Mapper says what a remoting request needs: its checks, or an error
// when the request cannot be read (refused). ext holds the request's ext
// fields (read once by the gate: cheaper than req.Ext).
type Mapper func(req *remoting.Request, ext Fields) ([]Check, error)

// Gate returns the hook for remoting.Server.SetGate: it authenticates and
// authorizes every request as the configuration says (codes of the white
// lists skip a step) and answers a refusal with NO_PERMISSION and
// upstream's remark; the connection stays open and no processor runs.
// The caller's identity (the verified AccessKey) is what Caller returns
// for the request from then on.
func (a *Authority) Gate(m Mapper) remoting.Gate {
	return func(req *remoting.Request) *remoting.Command {
		if err := a.check(req, m); err != nil {
			var r *Refusal
			remark := err.Error()
			if errors.As(err, &r) {
				remark = r.Remark
			}
			return remoting.NewResponse(remoting.NoPermission, remark)
		}
		return nil
	}
}

// SuperGate returns a gate for a server whose listed codes (writes) need
// an authenticated Super user and whose other codes stay open, unsigned
// requests included (the name server: registrations, KV and config
// changes need Super; route reads stay open as Apache's). It checks
// nothing when authentication is off.
func (a *Authority) SuperGate(codes map[int]bool) remoting.Gate {
	if !a.cfg.AuthenticationEnabled {
		return nil
	}
	super := func(*remoting.Request, Fields) ([]Check, error) {
		return []Check{{Resource: Resource{Type: TypeAny}, SuperOnly: true}}, nil
	}
	strict := &Authority{cfg: Config{AuthenticationEnabled: true, AuthorizationEnabled: true}, store: a.store, log: a.log}
	g := strict.Gate(super)
	return func(req *remoting.Request) *remoting.Command {
		if !codes[req.Code] {
			return nil
		}
		return g(req)
	}
}

func (a *Authority) check(req *remoting.Request, m Mapper) error {
	authn := a.cfg.AuthenticationEnabled && !a.cfg.AuthenticationWhitelist[req.Code]
	authz := a.cfg.AuthorizationEnabled && !a.cfg.AuthorizationWhitelist[req.Code]
	if !authn && !authz {
		return nil
	}
	f := signedPool.Get().(*signedFields)
	defer signedPool.Put(f)
	f.collect(req.Command)
	user := string(f.user)
	if authn {
		if !f.hasAK {
			return refuse("username cannot be null.")
		}
		if err := a.Authenticate(user, f.sig, func(h hash.Hash) { f.writeContent(h, req.Body) }); err != nil {
			return err
		}
	}
	if !authz {
		return nil
	}
	if a.IsSuper(user) {
		return nil
	}
	checks, err := m(req, Fields{f})
	if err != nil {
		return refuse("parse authorization context error: %v", err)
	}
	return a.Authorize(user, checks, remoteIP(req.Conn))
}

// remoteIP is the IP of the connection's peer.
func remoteIP(c *remoting.Conn) netip.Addr {
	if c == nil {
		return netip.Addr{}
	}
	switch ad := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return ad.AddrPort().Addr().Unmap()
	case nil:
		return netip.Addr{}
	default:
		return sourceIPOf(ad.String())
	}
}

// Caller returns the AccessKey a request carries ("" without one). Behind
// the gate with authentication on, it is verified.
func Caller(cmd *remoting.Command) string { return cmd.Ext(AccessKeyField) }

// ParseCodes parses a comma list of request codes (a white list).
func ParseCodes(s string) (map[int]bool, error) {
	out := map[int]bool{}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != ',' {
			continue
		}
		f := s[start:i]
		start = i + 1
		for len(f) > 0 && (f[0] == ' ' || f[0] == '\t') {
			f = f[1:]
		}
		for len(f) > 0 && (f[len(f)-1] == ' ' || f[len(f)-1] == '\t') {
			f = f[:len(f)-1]
		}
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%w: request code %q is not a number", ErrInvalid, f)
		}
		out[n] = true
	}
	return out, nil
}
