// Package proxy is a sandbox's network exit: an HTTP proxy (CONNECT and
// absolute-form requests) and a DNS answerer, served on a unix socket that
// the sandbox's agent relays its 127.0.0.1:3128 and 127.0.0.1:53 to. It
// judges every request and every CONNECT by the grant's allowlist (each
// redirect is a new request, judged again), dials through the server's
// egress guard (private, loopback and metadata addresses refused unless the
// operator allows private egress), and for hosts the session's vault holds a
// credential for it terminates TLS with the sandbox's own certificate
// authority, adds the credential and forwards to the real host, verifying
// its real certificate. Other hosts are tunnelled untouched.
package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subako/subako/runtime/egress"
	"github.com/subako/subako/runtime/egress/allowlist"
	"github.com/subako/subako/runtime/vault"
)

// Event is something the proxy did that the sandbox's record shows: a
// refused destination, a DNS name refused, a credential added.
type Event struct {
	Kind   string // EventRefused, EventDNSRefused or EventCredential
	Host   string
	Detail string
}

// Kinds of Event.
const (
	EventRefused    = "refused"
	EventDNSRefused = "dns_refused"
	EventCredential = "credential_added"
)

// Config says what one sandbox's exit allows.
type Config struct {
	// Name names the sandbox in its certificate authority's name.
	Name string
	// Allow is the grant's allowlist; nil allows any host (Internet mode),
	// still through the egress guard.
	Allow *allowlist.Rules
	// AllowPrivate turns the egress guard off (--egress-allow-private).
	AllowPrivate bool
	// Resolver resolves names for the dials and the DNS answers (nil: the
	// system's).
	Resolver *net.Resolver
	// RootCAs verify the real hosts' certificates (nil: the system's).
	RootCAs *x509.CertPool
	// HasCredential reports whether the session's vault holds a credential
	// for some URL of origin (https://host:port): then TLS to it is
	// terminated here. Nil: none is.
	HasCredential func(ctx context.Context, origin string) bool
	// Attach returns the attach step for one request's URL: nil when no
	// credential covers it.
	Attach func(ctx context.Context, url string) (func(*http.Request), error)
	// Log hears every Event.
	Log func(Event)
	// MaxConns bounds the connections open at once (default 256).
	MaxConns int
}

// Proxy is one sandbox's exit. Serve it on a listener; Close ends every
// connection.
type Proxy struct {
	cfg       Config
	ca        *ca
	transport *http.Transport
	slots     chan struct{}
	// replayHeld is the bytes of request bodies kept for a retry now.
	replayHeld atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	lns    []net.Listener
	closed bool
}

// Limits of one connection.
const (
	idleTimeout   = 2 * time.Minute
	dialTimeout   = 15 * time.Second
	maxHeaderSize = 64 << 10
)

// New makes a proxy and its certificate authority.
func New(cfg Config) (*Proxy, error) {
	c, err := newCA(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: certificate authority: %w", err)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	p := &Proxy{cfg: cfg, ca: c, slots: make(chan struct{}, cfg.MaxConns), conns: map[net.Conn]struct{}{}}
	p.transport = &http.Transport{
		DialContext:            p.dial,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           32,
		IdleConnTimeout:        time.Minute,
		TLSHandshakeTimeout:    dialTimeout,
		ExpectContinueTimeout:  time.Second,
		ResponseHeaderTimeout:  2 * time.Minute,
		MaxResponseHeaderBytes: maxHeaderSize,
	}
	return p, nil
}

// CACertPEM is the certificate a sandbox trusts for the hosts whose TLS the
// proxy terminates. Its key never leaves the server's memory.
func (p *Proxy) CACertPEM() []byte { return p.ca.certPEM }

// Close stops every listener and connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for _, ln := range p.lns {
		ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.transport.CloseIdleConnections()
}

// Serve accepts connections until ln is closed.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	p.lns = append(p.lns, ln)
	p.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		select {
		case p.slots <- struct{}{}:
		default:
			p.log(Event{Kind: EventRefused, Detail: fmt.Sprintf("more than %d connections open at once", p.cfg.MaxConns)})
			c.Close()
			continue
		}
		if !p.track(c) {
			<-p.slots
			c.Close()
			continue
		}
		go func() {
			defer func() { p.untrack(c); c.Close(); <-p.slots }()
			p.serveConn(c)
		}()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) log(e Event) {
	if p.cfg.Log != nil {
		p.cfg.Log(e)
	}
}

// serveConn reads requests from one connection: a CONNECT turns it into a
// tunnel (or a terminated TLS session), absolute-form requests are
// forwarded one after the other, POST /dns-query is a DNS question.
func (p *Proxy) serveConn(c net.Conn) {
	b := &budget{r: c, left: -1}
	br := bufio.NewReaderSize(b, 16<<10)
	for {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := readRequest(br, b)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				writeError(c, http.StatusBadRequest, "subako egress: "+err.Error())
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		switch {
		case req.Method == http.MethodConnect:
			p.connect(c, br, req)
			return
		case req.URL.Path == "/dns-query" && req.URL.Host == "" && req.Method == http.MethodPost:
			if !p.dnsOverHTTP(c, req) {
				return
			}
		case req.URL.IsAbs():
			if req.URL.Scheme != "http" {
				writeError(c, http.StatusBadRequest, "subako egress: only http:// URLs are proxied as such; https goes through CONNECT")
				return
			}
			if !p.forward(c, req, "http", hostPort(req.URL.Host, "80")) {
				return
			}
		default:
			writeError(c, http.StatusBadRequest, "subako egress: this is a proxy: send absolute URLs or CONNECT")
			return
		}
	}
}

// budget is a connection's reader that allows only so many bytes while a
// request's header is read (ReadRequest itself reads lines of any length).
type budget struct {
	r    io.Reader
	left int64 // < 0: no bound
}

func (b *budget) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, errors.New("request header too large")
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	return n, err
}

// readRequest reads one request with its header bounded.
func readRequest(br *bufio.Reader, b *budget) (*http.Request, error) {
	b.left = maxHeaderSize
	req, err := http.ReadRequest(br)
	b.left = -1
	return req, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func hostPort(h, defPort string) string {
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h
	}
	return net.JoinHostPort(strings.Trim(h, "[]"), defPort)
}

// allowed says whether a host may be tried at all: a name by the list's
// domain rules only, an address by its ranges. A name is never resolved
// because the list has ranges: DNS would then carry any name the sandbox
// makes up to whatever server answers for it (a way out for data).
func (p *Proxy) allowed(host string) bool {
	r := p.cfg.Allow
	if r == nil {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return r.AllowsAddr(a)
	}
	return r.AllowsName(host)
}

func (p *Proxy) refuse(w io.Writer, host, why string) {
	p.log(Event{Kind: EventRefused, Host: host, Detail: why})
	writeError(w, http.StatusForbidden, "subako egress: "+host+": "+why)
}

const notListed = "not on this sandbox's allowlist"

// dial connects to hostport through the guard: a name's addresses are
// resolved here, kept when the list allows them, and each is checked again
// at connect time (egress.Dialer).
func (p *Proxy) dial(ctx context.Context, _, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	addrs, err := p.addresses(ctx, host)
	if err != nil {
		return nil, err
	}
	d := egress.Dialer(p.cfg.AllowPrivate)
	d.Timeout = dialTimeout
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

// errNotListed is a name or address the allowlist does not have.
var errNotListed = errors.New(notListed)

// addresses are the addresses of host the sandbox may reach.
func (p *Proxy) addresses(ctx context.Context, host string) ([]netip.Addr, error) {
	r := p.cfg.Allow
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		if r != nil && !r.AllowsAddr(a) {
			return nil, errNotListed
		}
		addrs = []netip.Addr{a.Unmap()}
	} else {
		if r != nil && !r.AllowsName(host) {
			return nil, errNotListed
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		found, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		for _, a := range found {
			addrs = append(addrs, a.Unmap())
		}
		if len(addrs) == 0 {
			return nil, errNotListed
		}
	}
	var kept []netip.Addr
	var refused error
	for _, a := range addrs {
		if p.cfg.AllowPrivate {
			kept = append(kept, a)
		} else if err := egress.Check(a); err != nil {
			refused = err
		} else {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		return nil, refused
	}
	return kept, nil
}

// connect answers a CONNECT: refused, terminated (a credential host) or
// tunnelled.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	target := hostPort(req.URL.Host, "443")
	if req.URL.Host == "" {
		target = hostPort(req.Host, "443")
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil || host == "" {
		writeError(c, http.StatusBadRequest, "subako egress: CONNECT needs host:port")
		return
	}
	if !p.allowed(host) {
		p.refuse(c, host, notListed)
		return
	}
	if p.cfg.HasCredential != nil && p.cfg.HasCredential(req.Context(), "https://"+net.JoinHostPort(host, port)) {
		if _, err := p.addresses(req.Context(), host); err != nil {
			p.refuse(c, host, err.Error())
			return
		}
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		p.terminate(&bufConn{Conn: c, r: br}, host, port)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout+10*time.Second)
	up, err := p.dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		p.refuse(c, host, dialReason(err))
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer func() { p.untrack(up); up.Close() }()
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	splice(&bufConn{Conn: c, r: br}, up)
}

func dialReason(err error) string {
	if errors.Is(err, errNotListed) {
		return notListed
	}
	return err.Error()
}

// splice copies both ways until both sides are done.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

// bufConn is a connection whose first bytes were read into r.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// terminate is TLS to a credential host: the sandbox's own certificate for
// host, then each request is forwarded with the credential added.
func (p *Proxy) terminate(c net.Conn, host, port string) {
	leaf, err := p.ca.leaf(host)
	if err != nil {
		return
	}
	tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	tc.SetDeadline(time.Now().Add(dialTimeout))
	if err := tc.Handshake(); err != nil {
		return
	}
	tc.SetDeadline(time.Time{})
	b := &budget{r: tc, left: -1}
	br := bufio.NewReaderSize(b, 16<<10)
	for {
		tc.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := readRequest(br, b)
		if err != nil {
			return
		}
		tc.SetReadDeadline(time.Time{})
		if !p.forward(tc, req, "https", net.JoinHostPort(host, port)) {
			return
		}
	}
}

// hopHeaders are a connection's own, never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func stripHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// maxReplayBody is the largest request body kept in memory so a request
// refused 401 can be sent again after its OAuth credential is refreshed;
// maxReplayHeld bounds those kept at once by one exit (256 connections of
// 1 MiB each would otherwise hold 256 MiB of the server's memory).
const (
	maxReplayBody = 1 << 20
	maxReplayHeld = 16 << 20
)

// forward sends one request to scheme://hostport and writes the answer to
// w; false when the connection should end.
func (p *Proxy) forward(w io.Writer, req *http.Request, scheme, hostport string) bool {
	host, _, _ := net.SplitHostPort(hostport)
	keep := !req.Close
	if !p.allowed(host) {
		p.refuse(w, host, notListed)
		return false
	}
	out := req.Clone(context.Background())
	out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = scheme, hostport, hostport, ""
	if (scheme == "http" && strings.HasSuffix(hostport, ":80")) || (scheme == "https" && strings.HasSuffix(hostport, ":443")) {
		out.Host = host
		if strings.Contains(host, ":") {
			out.Host = "[" + host + "]"
		}
	}
	stripHop(out.Header)
	out.Close = false
	var attach func(*http.Request)
	var secrets []string
	if p.cfg.Attach != nil {
		a, err := p.cfg.Attach(req.Context(), out.URL.String())
		if err != nil {
			writeError(w, http.StatusBadGateway, "subako egress: credential for "+host+": "+err.Error())
			return false
		}
		if a != nil {
			attach = vault.Recording(a, &secrets)
			// The answer is read decoded, so a credential it repeats can be
			// masked; the transport asks for gzip itself.
			out.Header.Del("Accept-Encoding")
			// Kept only within the exit's budget for all its connections
			// (maxReplayHeld); past it the body streams and is not retried.
			if n := out.ContentLength; out.Body != nil && out.Body != http.NoBody && n >= 0 && n <= maxReplayBody {
				if p.replayHeld.Add(n) <= maxReplayHeld {
					defer p.replayHeld.Add(-n)
					b, err := io.ReadAll(io.LimitReader(out.Body, maxReplayBody+1))
					if err != nil {
						return false
					}
					out.Body = io.NopCloser(bytes.NewReader(b))
					out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
				} else {
					p.replayHeld.Add(-n)
				}
			}
		}
	}
	// The transport may still read a streamed body after RoundTrip returns
	// (an answer that came before the body was sent); it closes it when
	// done. Until then the next request must not be read from the same
	// connection (bodyFinished).
	var bodyDone chan struct{}
	if out.Body != nil && out.Body != http.NoBody {
		bc := &closeSignal{ReadCloser: out.Body, closed: make(chan struct{})}
		out.Body, bodyDone = bc, bc.closed
	}
	resp, err := vault.RoundTrip(p.transport, out, attach)
	if err != nil {
		if errors.Is(err, errNotListed) || errors.Is(err, egress.ErrRefused) {
			p.refuse(w, host, dialReason(unwrapDial(err)))
			return false
		}
		writeError(w, http.StatusBadGateway, "subako egress: "+host+": "+unwrapDial(err).Error())
		return false
	}
	defer resp.Body.Close()
	if attach != nil {
		p.log(Event{Kind: EventCredential, Host: host, Detail: out.Method + " " + scheme + "://" + hostport + out.URL.Path})
		// An answer the exit cannot read as sent (encoded other than the
		// gzip the transport asked for and undid) could carry the
		// credential past the mask: refused. Its header is masked like its
		// body, and its trailers (read after the body) are dropped.
		if ce := vault.Encoded(resp.Header); ce != "" && out.Method != http.MethodHead && bodyAllowed(resp.StatusCode) {
			writeError(w, http.StatusBadGateway, "subako egress: "+host+" answered encoded as "+clip(ce, 40)+
				" without being asked: an answer to a request with a credential added must be plain or gzip, so the exit can keep the credential out of it")
			return false
		}
		resp.Trailer = nil
		if len(secrets) > 0 {
			vault.MaskHeader(resp.Header, secrets)
			resp.Body = maskReader(resp.Body, secrets)
		}
	}
	stripHop(resp.Header)
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	resp.TransferEncoding = nil
	if resp.ContentLength < 0 && req.Method != http.MethodHead && bodyAllowed(resp.StatusCode) {
		resp.TransferEncoding = []string{"chunked"}
	}
	resp.Close = !keep
	resp.Header.Del("Content-Length")
	if resp.ContentLength >= 0 {
		resp.Header.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	if err := resp.Write(w); err != nil {
		return false
	}
	return keep && !resp.Close && bodyFinished(bodyDone)
}

// closeSignal is a request body that says when its reader closed it.
type closeSignal struct {
	io.ReadCloser
	once   sync.Once
	closed chan struct{}
}

func (b *closeSignal) Close() error {
	// A body read by http.ReadRequest reads to its end on Close (from the
	// sandbox's connection): closed only after that.
	err := b.ReadCloser.Close()
	b.once.Do(func() { close(b.closed) })
	return err
}

// bodyWait bounds how long a connection waits, after an answer, for the
// transport to finish with the request's body before its next request:
// past it the connection ends instead.
const bodyWait = 5 * time.Second

// bodyFinished waits, at most bodyWait, until the transport is done with
// a request's body (closed, its rest read from the connection). Reading
// the next request while the transport still reads the body would read
// the same connection from two goroutines (a panic in bufio, or the body's
// bytes taken for a request). True when there was no body.
func bodyFinished(done chan struct{}) bool {
	if done == nil {
		return true
	}
	t := time.NewTimer(bodyWait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func bodyAllowed(code int) bool {
	return !(code >= 100 && code < 200) && code != http.StatusNoContent && code != http.StatusNotModified
}

// unwrapDial is the guard's own error out of the transport's wrapping.
func unwrapDial(err error) error {
	var re *egress.RefusedError
	if errors.As(err, &re) {
		return re
	}
	var ue interface{ Unwrap() error }
	for errors.As(err, &ue) {
		inner := ue.Unwrap()
		if inner == nil {
			break
		}
		if errors.Is(inner, errNotListed) {
			return errNotListed
		}
		err = inner
	}
	return err
}

func writeError(w io.Writer, code int, msg string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
}
