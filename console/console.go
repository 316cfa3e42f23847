package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Console.
type Options struct {
	// Admin is the client every page reads and writes through; required.
	// The Console does not close it.
	Admin *admin.Client
	// BasePath is where the console is mounted ("" for the root,
	// "/console" on a broker's HTTP port); no trailing slash.
	BasePath string
	// Writes says who may change anything; the zero value allows
	// requests from the loopback interface only.
	Writes WritePolicy
	// SampleInterval is how often the TPS and lag charts are sampled; 0
	// means 10 s. Samples are kept for History.
	SampleInterval time.Duration
	// History is how far back the charts go; 0 means one hour.
	History time.Duration
	// Timeout bounds the calls behind one page; 0 means 5 s.
	Timeout time.Duration
	// Logger receives the console's errors; nil discards.
	Logger *slog.Logger
	// Login, when set, makes the console ask for a user of the brokers'
	// access control and act with that user's rights (their policies
	// decide what they may read and write; Writes is then not used).
	// Admin still draws the lists of names and the charts.
	Login LoginFunc
}

func (o Options) withDefaults() Options {
	if o.SampleInterval <= 0 {
		o.SampleInterval = 10 * time.Second
	}
	if o.History <= 0 {
		o.History = time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.BasePath = strings.TrimRight(o.BasePath, "/")
	return o
}

// Console is the web console, an http.Handler. Close stops its sampler.
type Console struct {
	opts    Options
	ac      *admin.Client
	log     *slog.Logger
	mux     *http.ServeMux
	pages   map[string]*template.Template
	csrfKey []byte
	hist    *history
	users   sessions
	// topicList and groupList are the names the list pages filter.
	topicList, groupList namesCache

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns a console and starts its sampler.
func New(opts Options) (*Console, error) {
	opts = opts.withDefaults()
	if opts.Admin == nil {
		return nil, errors.New("console: Options.Admin is required")
	}
	if opts.BasePath != "" && !strings.HasPrefix(opts.BasePath, "/") {
		return nil, fmt.Errorf("console: BasePath %q must start with /", opts.BasePath)
	}
	c := &Console{
		opts: opts, ac: opts.Admin, log: opts.Logger,
		csrfKey: make([]byte, 32),
		hist:    newHistory(opts.History),
		stop:    make(chan struct{}),
	}
	if _, err := rand.Read(c.csrfKey); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	var err error
	if c.pages, err = parseTemplates(opts.BasePath); err != nil {
		return nil, err
	}
	c.topicList.fetch, c.groupList.fetch = c.fetchTopics, c.fetchGroups
	c.routes()
	c.wg.Go(c.sampleLoop)
	return c, nil
}

// Close stops the sampler and ends the sessions. It does not close
// Options.Admin.
func (c *Console) Close() error {
	c.closeOnce.Do(func() { close(c.stop) })
	c.wg.Wait()
	c.users.closeAll()
	return nil
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

func (c *Console) routes() {
	b := c.opts.BasePath
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+b+"/static/", http.StripPrefix(b+"/static/", cacheStatic(http.FileServerFS(static))))
	get := func(path string, h pageFunc) { m.Handle("GET "+b+path, c.page(h)) }
	post := func(path string, h actionFunc) { m.Handle("POST "+b+path, c.action(h)) }
	get("/{$}", c.overview)
	get("/broker", c.brokerPage)
	get("/topics", c.topicsPage)
	get("/topic", c.topicPage)
	get("/groups", c.groupsPage)
	get("/group", c.groupPage)
	get("/producers", c.producersPage)
	get("/messages", c.messagesPage)
	get("/message", c.messagePage)
	get("/dlq", c.dlqPage)
	m.Handle("GET "+b+"/dlq/export", c.guard(c.loggedIn(http.HandlerFunc(c.dlqExport))))
	m.Handle("GET "+b+"/login", c.page(c.loginPage))
	m.Handle("POST "+b+"/login", c.guard(http.HandlerFunc(c.login)))
	m.Handle("POST "+b+"/logout", c.guard(http.HandlerFunc(c.logout)))
	post("/topic/update", c.topicUpdate)
	post("/topic/delete", c.topicDelete)
	post("/topic/send", c.topicSend)
	post("/group/update", c.groupUpdate)
	post("/group/delete", c.groupDelete)
	post("/group/reset", c.groupReset)
	post("/message/resend", c.messageResend)
	if b != "" {
		m.Handle("GET "+b, http.RedirectHandler(b+"/", http.StatusFound))
	}
	c.mux = m
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// view is what a page handler gives the layout: its template, title and
// data.
type view struct {
	Template string // the page's file under templates/
	Title    string
	Nav      string // the menu entry to mark
	Data     any
}

// pageData is what every template gets.
type pageData struct {
	Base     string
	Title    string
	Nav      string
	CSRF     string
	CanWrite bool
	Writes   string // the policy, in words
	User     string // logged in, with Options.Login
	Flash    string
	Error    string
	Data     any
}

type pageFunc func(ctx context.Context, r *http.Request) (view, error)

// actionFunc handles a form post and returns where to go next and what
// to tell there.
type actionFunc func(ctx context.Context, r *http.Request) (to string, flash string, err error)

// guard adds the headers every answer gets and the CSRF cookie.
func (c *Console) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Referrer-Policy", "same-origin")
		hdr.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func (c *Console) page(h pageFunc) http.Handler {
	return c.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		token := c.csrfToken(w, r)
		ctx, cancel := context.WithTimeout(r.Context(), c.opts.Timeout)
		defer cancel()
		tm := &timings{}
		ctx = context.WithValue(ctx, timingsKey{}, tm)
		user := ""
		if c.opts.Login != nil && !strings.HasSuffix(r.URL.Path, "/login") {
			s := c.session(r)
			if s == nil {
				http.Redirect(w, r, link(c.opts.BasePath+"/login", "next", strings.TrimPrefix(r.URL.RequestURI(), c.opts.BasePath)), http.StatusSeeOther)
				return
			}
			ctx, user = context.WithValue(ctx, sessionKey{}, s), s.user
		}
		v, err := h(ctx, r)
		status := http.StatusOK
		d := pageData{Base: c.opts.BasePath, Title: v.Title, Nav: v.Nav, CSRF: token, CanWrite: c.canWrite(r),
			Writes: c.opts.Writes.String(), User: user, Flash: c.flash(r), Data: v.Data}
		if err != nil {
			status = statusOf(err)
			d.Error = errorText(err)
			v.Template, d.Title, d.Data = "error.html", "Error", nil
		}
		tm.header(w.Header())
		c.render(w, status, v.Template, d, start)
	}))
}

// timings are the parts of a page's server time, for its Server-Timing
// header: what a page spent waiting for which answers.
type timings struct {
	mu    sync.Mutex // guards parts
	parts []string
}

type timingsKey struct{}

// timed records how long the part of a page named name took since start.
func timed(ctx context.Context, name string, start time.Time) {
	if tm, ok := ctx.Value(timingsKey{}).(*timings); ok {
		tm.mu.Lock()
		tm.parts = append(tm.parts, fmt.Sprintf("%s;dur=%.1f", name, float64(time.Since(start).Microseconds())/1000))
		tm.mu.Unlock()
	}
}

func (tm *timings) header(h http.Header) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for _, p := range tm.parts {
		h.Add("Server-Timing", p)
	}
}

func (c *Console) render(w http.ResponseWriter, status int, name string, d pageData, start time.Time) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
		c.log.Error("rendering a console page", "template", name, "err", err)
		http.Error(w, "the page could not be drawn; the console's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Add("Server-Timing", fmt.Sprintf("app;dur=%.1f", float64(time.Since(start).Microseconds())/1000))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (c *Console) action(h actionFunc) http.Handler {
	return c.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, http.StatusBadRequest, fmt.Errorf("the form could not be read: %w", err), start)
			return
		}
		if err := c.checkWrite(r); err != nil {
			c.fail(w, r, http.StatusForbidden, err, start)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*c.opts.Timeout)
		defer cancel()
		if c.opts.Login != nil {
			ctx = context.WithValue(ctx, sessionKey{}, c.session(r)) // checkWrite saw one
		}
		to, flash, err := h(ctx, r)
		if err != nil {
			c.fail(w, r, statusOf(err), err, start)
			return
		}
		if flash != "" {
			sep := "?"
			if strings.Contains(to, "?") {
				sep = "&"
			}
			to += sep + "flash=" + queryEscape(flash) + "&fs=" + c.sign("flash:" + flash)[:32]
		}
		http.Redirect(w, r, c.opts.BasePath+to, http.StatusSeeOther)
	}))
}

// flash is the message a redirect after a form carries to the page it
// leads to; it is shown only with the console's signature, so that a link
// made elsewhere cannot put words on a console page.
func (c *Console) flash(r *http.Request) string {
	f, sig := r.URL.Query().Get("flash"), r.URL.Query().Get("fs")
	if f == "" || !hmac.Equal([]byte(sig), []byte(c.sign("flash:" + f)[:32])) {
		return ""
	}
	return f
}

// loggedIn refuses a request without a session when the console asks
// for a user, and gives the handler the session's client.
func (c *Console) loggedIn(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.opts.Login != nil {
			s := c.session(r)
			if s == nil {
				http.Error(w, "log in first", http.StatusUnauthorized)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
		}
		h.ServeHTTP(w, r)
	})
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, err error, start time.Time) {
	d := pageData{Base: c.opts.BasePath, Title: "Error", CSRF: c.csrfToken(w, r),
		CanWrite: c.canWrite(r), Writes: c.opts.Writes.String(), Error: errorText(err)}
	if s := c.session(r); s != nil {
		d.User = s.user
	}
	c.render(w, status, "error.html", d, start)
}

// userError is a request the console cannot carry out as asked (bad
// input): 400, with words that say what to change.
type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func badRequest(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

// notFound is a page whose subject does not exist: 404.
type notFound struct{ msg string }

func (e notFound) Error() string { return e.msg }

func statusOf(err error) int {
	var ue userError
	var nf notFound
	var ae *admin.UnreachableError
	switch {
	case errors.As(err, &ue):
		return http.StatusBadRequest
	case errors.As(err, &nf):
		return http.StatusNotFound
	case errors.As(err, &ae), errors.Is(err, context.DeadlineExceeded):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

func errorText(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
