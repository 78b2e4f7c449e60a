package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/egress"
)

// Defaults for Options.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
	// A tool's answer is recorded cut at 1 MiB anyway; 4 MiB leaves room for
	// JSON escaping and structured content beside the text, and holds a
	// server that streams without end to a few MiB of memory per call.
	DefaultMaxResponseBytes = 4 << 20
	// Clients choke on far fewer tools than this (model APIs take a few
	// hundred at most); it bounds what one server can make the server keep.
	DefaultMaxTools = 1000
	// A description is meant for a model's context: 8 KiB is pages of text.
	DefaultMaxDescriptionBytes = 8 << 10
	// The largest schemas of real servers (nested GitHub and cloud APIs)
	// are a few KiB; 64 KiB is generous and still bounds a list.
	DefaultMaxSchemaBytes = 64 << 10
)

// ErrClosed is returned by a Pool after Close.
var ErrClosed = errors.New("mcpclient: pool is closed")

// Options configure a Pool. The zero value is ready to use.
type Options struct {
	// Timeout bounds connecting, and apart from that each Discover (all its
	// pages) or Call. Zero means DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout closes a cached session unused for this long. Zero means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Transport carries the HTTP requests; nil means egress.Transport, shared
	// by every session of the pool, which refuses private and loopback
	// addresses unless AllowPrivate is set.
	Transport http.RoundTripper
	// AllowPrivate lets the default transport reach loopback, private and
	// link-local addresses (--egress-allow-private). It has no effect on a
	// Transport given here.
	AllowPrivate bool
	// Limits bound what a server may send.
	Limits
}

// Limits bound what a server may send. Zero fields take the defaults above.
type Limits struct {
	// MaxResponseBytes bounds the bytes read from one HTTP response, so one
	// answer (a tools/call result, a tools/list page, an SSE stream) cannot
	// fill the server's memory; past it the exchange fails with ErrTooLarge.
	// Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxTools, MaxDescriptionBytes and MaxSchemaBytes bound discovery: tools
	// past MaxTools are counted and dropped, a tool whose description or
	// input schema is larger than its limit is skipped with the reason, and
	// so is every tool once those kept fill MaxResponseBytes.
	MaxTools            int
	MaxDescriptionBytes int
	MaxSchemaBytes      int
}

func (o Options) orDefault() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Transport == nil {
		o.Transport = egress.Transport(o.AllowPrivate)
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxTools <= 0 {
		o.MaxTools = DefaultMaxTools
	}
	if o.MaxDescriptionBytes <= 0 {
		o.MaxDescriptionBytes = DefaultMaxDescriptionBytes
	}
	if o.MaxSchemaBytes <= 0 {
		o.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	return o
}

// Pool keeps initialized MCP client sessions keyed by (server URL, key). It
// is safe for concurrent use. The key is opaque here: callers who pass the
// same URL and key share one upstream MCP session and all its state, so the
// key must name everything that may not share it (the runtime uses its
// session id and credential id). Callers must pass an attach function that
// presents the credential the key names: the latest one given is used for
// every request of that session.
type Pool struct {
	opts   Options
	client *mcp.Client

	mu      sync.Mutex
	entries map[key]*entry
	closed  bool
}

type key struct{ url, sessionKey string }

// entry is one cached session. ready is closed once connecting finished,
// after which cs or err is set and never changes.
type entry struct {
	key    key
	ready  chan struct{}
	cs     *mcp.ClientSession
	err    error
	attach atomic.Pointer[attachFunc]
	// overLimit is set once a response of this session passed
	// MaxResponseBytes: the session is dropped, and its transport refuses
	// every later request (an SSE resume would start another answer).
	overLimit atomic.Bool

	// Guarded by Pool.mu.
	users   int
	evicted bool
	idleGen int
	idle    *time.Timer
}

// NewPool returns an empty pool.
func NewPool(opts Options) *Pool {
	opts = opts.orDefault()
	client := mcp.NewClient(&mcp.Implementation{Name: "subako", Version: "1"},
		// Subako answers no server-initiated requests: advertise nothing.
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{},
			// A call that asked for progress (WithProgress) gets the server's.
			ProgressNotificationHandler: relayProgress})
	return &Pool{opts: opts, client: client, entries: map[key]*entry{}}
}

// acquire returns a connected entry for the key, connecting once however
// many callers ask at the same time. The caller must release it.
func (p *Pool) acquire(ctx context.Context, rawURL, sessionKey string, attach attachFunc) (*entry, error) {
	k := key{rawURL, sessionKey}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	e, cached := p.entries[k]
	if !cached {
		e = &entry{key: k, ready: make(chan struct{})}
		p.entries[k] = e
	}
	e.users++
	e.idleGen++
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	e.attach.Store(&attach)
	p.mu.Unlock()
	if !cached {
		go p.connect(ctx, e)
	}

	select {
	case <-e.ready:
	case <-ctx.Done():
		p.release(e, false)
		return nil, ctx.Err()
	}
	if e.err != nil {
		p.release(e, true)
		return nil, e.err
	}
	return e, nil
}

// connect runs the MCP handshake for e. It is detached from the caller's
// cancellation: other callers may be waiting on the same session.
func (p *Pool) connect(ctx context.Context, e *entry) {
	defer close(e.ready)
	endpoint, err := parseEndpoint(e.key.url)
	if err != nil {
		e.err = err
		return
	}
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), p.opts.Timeout, &timeoutError{p.opts.Timeout})
	defer cancel()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   e.key.url,
		HTTPClient: newHTTPClient(p.opts.Transport, endpoint, &e.attach, &bodyLimit{max: p.opts.MaxResponseBytes, over: &e.overLimit}),
		// Server-initiated messages are not used; a standing GET per cached
		// session would only hold a connection open.
		DisableStandaloneSSE: true,
		// The body limit cuts first and says so; the SDK's own cut on one
		// event is only a second line.
		MaxEventSize: int(p.opts.MaxResponseBytes) + 64<<10,
	}
	e.cs, e.err = p.client.Connect(ctx, transport, nil)
	if e.err != nil && ctx.Err() != nil {
		e.err = context.Cause(ctx)
	}
	if e.err != nil && e.overLimit.Load() {
		e.err = &tooLargeError{limit: p.opts.MaxResponseBytes}
	}
}

// release returns e after use. evict drops it from the pool after a failure,
// so the next caller connects afresh. The last user of an idle entry starts
// its idle timer.
func (p *Pool) release(e *entry, evict bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.users--
	if evict {
		p.evictLocked(e)
	}
	switch {
	case e.users > 0:
	case e.evicted:
		closeWhenReady(e)
	default:
		gen := e.idleGen
		e.idle = time.AfterFunc(p.opts.IdleTimeout, func() { p.expire(e, gen) })
	}
}

// expire closes e if nobody used it since the timer for gen was set.
func (p *Pool) expire(e *entry, gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.users > 0 || e.evicted || e.idleGen != gen {
		return
	}
	p.evictLocked(e)
	closeWhenReady(e)
}

func (p *Pool) evictLocked(e *entry) {
	e.evicted = true
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
}

func closeWhenReady(e *entry) {
	go func() {
		<-e.ready
		if e.cs != nil {
			_ = e.cs.Close()
		}
	}()
}

// Close ends every cached session and refuses further use. Idle sessions
// are closed before it returns (one DELETE each, bounded by the SDK); those
// still connecting or in use are closed when they are free.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var idle []*entry
	for _, e := range p.entries {
		if e.idle != nil {
			e.idle.Stop()
		}
		p.evictLocked(e)
		if e.users == 0 && isReady(e) {
			idle = append(idle, e)
		} else if e.users == 0 {
			closeWhenReady(e)
		}
		// Entries in use are closed by their last release.
	}
	p.mu.Unlock()
	for _, e := range idle {
		if e.cs != nil {
			_ = e.cs.Close()
		}
	}
	if t, ok := p.opts.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return nil
}

func isReady(e *entry) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// Len is the number of cached sessions, for metrics and tests.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// parseEndpoint accepts absolute http and https URLs only.
func parseEndpoint(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcpclient: url %q must be an absolute http or https URL", redact(rawURL))
	}
	return u, nil
}
