package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// LoginFunc makes a client that acts as a user of the brokers' access
// control (ACL 2.0: the username is the AccessKey, the password the
// SecretKey the requests are signed with).
type LoginFunc func(username, password string) (*admin.Client, error)

const (
	sessionCookie = "rocketstore_console_session"
	sessionIdle   = 30 * time.Minute // a session not used for this long ends
	maxSessions   = 256
)

// session is a logged-in user and the client that acts as them.
type session struct {
	user string
	ac   *admin.Client
	seen time.Time
}

// sessions are the logged-in users, by their cookie's value.
type sessions struct {
	mu sync.Mutex // guards m
	m  map[string]*session
}

// get returns the live session of id, and marks it used.
func (ss *sessions) get(id string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil {
		return nil
	}
	if now.Sub(s.seen) > sessionIdle {
		delete(ss.m, id)
		s.ac.Close()
		return nil
	}
	s.seen = now
	return s
}

// add keeps a new session, ending the least recently used one past
// maxSessions, and returns its id.
func (ss *sessions) add(s *session) string {
	b := make([]byte, 32)
	rand.Read(b)
	id := hex.EncodeToString(b)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[string]*session{}
	}
	for len(ss.m) >= maxSessions {
		oldest := ""
		for k, v := range ss.m {
			if oldest == "" || v.seen.Before(ss.m[oldest].seen) {
				oldest = k
			}
		}
		ss.m[oldest].ac.Close()
		delete(ss.m, oldest)
	}
	ss.m[id] = s
	return id
}

func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.m[id]; s != nil {
		s.ac.Close()
		delete(ss.m, id)
	}
}

func (ss *sessions) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, s := range ss.m {
		s.ac.Close()
		delete(ss.m, id)
	}
}

type sessionKey struct{}

// session returns the request's logged-in session, nil for none.
func (c *Console) session(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	return c.users.get(ck.Value, time.Now())
}

// adm is the client a request acts with: its user's when the console
// asks for one, else the console's own.
func (c *Console) adm(ctx context.Context) *admin.Client {
	if s, ok := ctx.Value(sessionKey{}).(*session); ok {
		return s.ac
	}
	return c.ac
}

// ErrLogin: the brokers refused the user's credentials.
var ErrLogin = errors.New("console: login refused")

// checkLogin asks a master for its runtime figures as the user: an answer,
// or a refusal for want of rights (the user is known, the signature
// good), lets them in; a refused signature or an unknown user does not.
func (c *Console) checkLogin(ctx context.Context, ac *admin.Client) error {
	masters, _, err := c.masters(ctx)
	if err != nil {
		return err
	}
	for _, addr := range masters {
		_, err := ac.BrokerRuntimeInfo(ctx, addr)
		var re *admin.ResponseError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re) && re.Code == remoting.NoPermission:
			if strings.Contains(re.Remark, "has no permission") {
				return nil
			}
			return fmt.Errorf("%w: %s", ErrLogin, re.Remark)
		default:
			return err
		}
	}
	return errors.New("console: no broker to log in to")
}

type loginData struct{ User, Next string }

func (c *Console) loginPage(_ context.Context, r *http.Request) (view, error) {
	if c.opts.Login == nil {
		return view{}, notFound{"this console asks for no login (the brokers have no access control)"}
	}
	return view{Template: "login.html", Title: "Log in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}}, nil
}

// safeNext keeps a page to go to after logging in only if it is one of
// the console's own (a path, not another site).
func safeNext(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.Contains(s, `\`) {
		return "/"
	}
	return s
}

// login checks the form's credentials with the brokers and starts a
// session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if c.opts.Login == nil {
		http.NotFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, err, start)
		return
	}
	if err := c.checkOriginAndToken(r); err != nil {
		c.fail(w, r, http.StatusForbidden, err, start)
		return
	}
	user, password := strings.TrimSpace(r.PostFormValue("username")), r.PostFormValue("password")
	if user == "" || password == "" {
		c.fail(w, r, http.StatusBadRequest, badRequest("give a username and a password"), start)
		return
	}
	ac, err := c.opts.Login(user, password)
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err, start)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.Timeout)
	defer cancel()
	if err := c.checkLogin(ctx, ac); err != nil {
		ac.Close()
		status := statusOf(err)
		if errors.Is(err, ErrLogin) {
			status = http.StatusUnauthorized
		}
		c.log.Info("console login refused", "user", user, "from", r.RemoteAddr)
		c.fail(w, r, status, err, start)
		return
	}
	id := c.users.add(&session{user: user, ac: ac, seen: time.Now()})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: c.opts.BasePath + "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	c.log.Info("console login", "user", user, "from", r.RemoteAddr)
	http.Redirect(w, r, c.opts.BasePath+safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if err := r.ParseForm(); err != nil || c.checkOriginAndToken(r) != nil {
		c.fail(w, r, http.StatusForbidden, ErrCSRF, start)
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.users.end(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: c.opts.BasePath + "/", MaxAge: -1, HttpOnly: true})
	http.Redirect(w, r, c.opts.BasePath+"/login", http.StatusSeeOther)
}
