package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subako/subako/runtime/egress/allowlist"
	"github.com/subako/subako/runtime/egress/proxy"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/tools"
)

// A sandbox's network exit (docs/sandbox-egress.md): in allowlist and
// Internet modes each machine gets a proxy of its own on the server
// (runtime/egress/proxy), reached through a unix socket bound into the
// sandbox and relayed by its agent. The proxy judges each request by the
// grant's allowlist and adds the session vault's credentials through the
// same attach step as MCP servers and functions (attacherFor).

// exitGrant is what a start needs to know of the grant beyond the Key: the
// session whose vaults supply credentials, and the allowlist. runSandbox
// puts it on the context the Manager hands the driver's Start.
type exitGrant struct {
	SessionID string
	Allow     []string
}

type exitGrantKey struct{}

// sandboxNetwork is the driver's network mode of a grant's network type:
// "internet" is today's "unrestricted".
func sandboxNetwork(t string) string {
	switch t {
	case tools.NetworkInternet:
		return sandbox.NetworkUnrestricted
	case tools.NetworkAllowlist:
		return sandbox.NetworkAllowlist
	}
	return t
}

// withExit readies key and ctx for a start of e's sandbox.
func (r *Runtime) withExit(ctx context.Context, e SandboxExec, key *sandbox.Key) context.Context {
	key.Network = sandboxNetwork(e.Grant.Network.Type)
	return context.WithValue(ctx, exitGrantKey{}, exitGrant{SessionID: e.SessionID, Allow: slices.Clone(e.Grant.Network.Allow)})
}

// sandboxExit is one machine's proxy and the folder bound into it.
type sandboxExit struct {
	dir   string
	proxy *proxy.Proxy
	once  sync.Once
}

func (x *sandboxExit) close() {
	if x == nil {
		return
	}
	x.once.Do(func() {
		x.proxy.Close()
		os.RemoveAll(x.dir)
	})
}

// exitMachine is a machine with its exit, closed when it stops.
type exitMachine struct {
	sandbox.Machine
	exit *sandboxExit
}

func (m *exitMachine) Stop() error {
	err := m.Machine.Stop()
	m.exit.close()
	return err
}

// HostPID passes the driver's through (the Internet mode's route filter).
func (m *exitMachine) HostPID() int {
	if hp, ok := m.Machine.(interface{ HostPID() int }); ok {
		return hp.HostPID()
	}
	return 0
}

// Unwrap is the driver's own machine, for callers that need its methods.
func (m *exitMachine) Unwrap() sandbox.Machine { return m.Machine }

// wantsExit: an allowlist sandbox always has its exit; an Internet one
// when its session has a credential in its vaults at the start (its
// HTTP(S) traffic then goes through the exit, which adds the credential to
// its hosts and tunnels the rest); otherwise Internet mode is as before,
// slirp4netns alone.
func (d *egressDriver) wantsExit(ctx context.Context, spec sandbox.Spec) bool {
	switch {
	case d.rt == nil:
		return false
	case spec.Network == sandbox.NetworkAllowlist:
		return true
	case spec.Network != sandbox.NetworkUnrestricted:
		return false
	}
	g, _ := ctx.Value(exitGrantKey{}).(exitGrant)
	if g.SessionID == "" {
		return false
	}
	recs, err := d.rt.sessionCredentials(ctx, g.SessionID)
	return err == nil && len(recs) > 0
}

// openExit starts the proxy of one machine. A start without its grant on
// the context (not through an exec) gets an exit that allows nothing and
// attaches nothing.
func (d *egressDriver) openExit(ctx context.Context, spec sandbox.Spec) (*sandboxExit, error) {
	g, _ := ctx.Value(exitGrantKey{}).(exitGrant)
	cfg := proxy.Config{Name: spec.ID, RootCAs: d.rootCAs, Resolver: d.resolver, MaxConns: 256}
	if spec.Network == sandbox.NetworkAllowlist {
		// --egress-allow-private opens private addresses to what an
		// allowlist names; an Internet sandbox's exit refuses them always,
		// as its routes do.
		cfg.AllowPrivate = d.rt.opts.AllowPrivateEgress
		rules, err := allowlist.New(g.Allow)
		if err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", spec.ID, err)
		}
		cfg.Allow = rules
	}
	if g.SessionID != "" {
		cfg.HasCredential = func(ctx context.Context, origin string) bool { return d.rt.hasCredentialFor(ctx, g.SessionID, origin) }
		cfg.Attach = func(ctx context.Context, u string) (func(*http.Request), error) {
			credID, attach, err := d.rt.attacherFor(ctx, g.SessionID, u)
			if err != nil || credID == "" {
				return nil, err
			}
			return attach, nil
		}
	}
	cfg.Log = func(e proxy.Event) { d.exits.add(spec.ID, e, d.rt.now()) }
	p, err := proxy.New(cfg)
	if err != nil {
		return nil, err
	}
	parent, err := exitsDir()
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: network exit folder: %w", spec.ID, err)
	}
	name := make([]byte, 16)
	rand.Read(name)
	dir := filepath.Join(parent, hex.EncodeToString(name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox %s: network exit folder: %w", spec.ID, err)
	}
	x := &sandboxExit{dir: dir, proxy: p}
	if err := writeExitFiles(dir, p.CACertPEM()); err != nil {
		x.close()
		return nil, fmt.Errorf("sandbox %s: network exit: %w", spec.ID, err)
	}
	sock := filepath.Join(dir, sandbox.EgressSocket)
	ln, err := net.Listen("unix", sock)
	if err == nil {
		// The sandbox's uid connects; the folder stays the server's.
		err = os.Chmod(sock, 0o666)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		x.close()
		return nil, fmt.Errorf("sandbox %s: network exit socket: %w", spec.ID, err)
	}
	go p.Serve(ln)
	return x, nil
}

// exitsRoot is the server's folder of exit folders: its own, 0711 (bwrap,
// run as the sandbox uid, passes through it to bind a sandbox's folder), and
// each sandbox's folder has a random 128-bit name that cannot be listed, so
// no one else on the host finds a sandbox's proxy socket (and the
// credentials its exit adds).
var exitsRoot struct {
	once sync.Once
	dir  string
	err  error
}

func exitsDir() (string, error) {
	exitsRoot.once.Do(func() {
		exitsRoot.dir, exitsRoot.err = os.MkdirTemp("", "subako-exits-")
		if exitsRoot.err == nil {
			exitsRoot.err = os.Chmod(exitsRoot.dir, 0o711)
		}
	})
	return exitsRoot.dir, exitsRoot.err
}

// systemBundles are where a Debian or Red Hat host keeps its authorities.
var systemBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"}

// writeExitFiles writes the sandbox's authority and the bundle programs
// trust inside it: the system's authorities and the sandbox's own.
func writeExitFiles(dir string, caPEM []byte) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	var bundle []byte
	for _, p := range systemBundles {
		if b, err := os.ReadFile(p); err == nil {
			bundle = append(b, '\n')
			break
		}
	}
	bundle = append(bundle, caPEM...)
	return errors.Join(
		os.WriteFile(filepath.Join(dir, sandbox.EgressCA), caPEM, 0o644),
		os.WriteFile(filepath.Join(dir, sandbox.EgressBundle), bundle, 0o644))
}

// hasCredentialFor reports whether one of the session's credentials has a
// prefix on origin (scheme://host:port): the exit then terminates TLS to it.
func (r *Runtime) hasCredentialFor(ctx context.Context, sessionID, origin string) bool {
	recs, err := r.sessionCredentials(ctx, sessionID)
	if err != nil {
		r.opts.Log.Error("runtime: sandbox exit: session credentials", "session", sessionID, "err", err)
		return false
	}
	want, ok := originOf(origin)
	if !ok {
		return false
	}
	for _, c := range recs {
		if o, ok := originOf(c.Prefix); ok && o == want {
			return true
		}
	}
	return false
}

// originOf is scheme://host:port of a URL, the port always written.
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// ExitEventView is one thing a sandbox's network exit did, as the sandbox's
// record shows it: refused destinations and names, credentials added. The
// same kind and host are counted on one line.
type ExitEventView struct {
	Kind   string    `json:"kind"`
	Host   string    `json:"host"`
	Detail string    `json:"detail"`
	Count  int       `json:"count"`
	Last   time.Time `json:"last"`
}

// maxExitEvents bounds the lines kept per sandbox (the newest are kept),
// maxExitSandboxes the sandboxes kept (past it, the least recent goes).
const (
	maxExitEvents    = 50
	maxExitSandboxes = 4096
)

// exitLog keeps the recent exit events of every sandbox, in memory.
type exitLog struct {
	mu   sync.Mutex
	byID map[string][]ExitEventView
	log  func(msg string, args ...any)
	// logged is each sandbox's server log lines in the current minute: a
	// sandbox that loops on refused requests writes at most
	// maxExitLogLines a minute, then one line saying how many it left out.
	logged map[string]*exitLogWindow
}

type exitLogWindow struct {
	start   time.Time
	lines   int
	skipped int
}

// Bounds of what one refusal costs: its host and detail as kept and
// logged (a host can be a 64 KiB header's worth), and the server log
// lines a sandbox writes a minute.
const (
	maxExitHost     = 253
	maxExitDetail   = 512
	maxExitLogLines = 20
)

func clipExit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return clipRunes(s, n)
}

// logRefusal writes a refusal to the server log within the sandbox's
// minute's lines; l.mu is held.
func (l *exitLog) logRefusal(id string, e proxy.Event, now time.Time) {
	if l.log == nil || e.Kind == proxy.EventCredential {
		return
	}
	if l.logged == nil {
		l.logged = map[string]*exitLogWindow{}
	}
	w := l.logged[id]
	if w == nil || now.Sub(w.start) >= time.Minute || now.Before(w.start) {
		if w != nil && w.skipped > 0 {
			l.log("sandbox: network exit refused more than this log shows", "sandbox", id, "left_out", w.skipped,
				"per_minute", maxExitLogLines)
		}
		if w == nil && len(l.logged) >= maxExitSandboxes {
			clear(l.logged)
		}
		w = &exitLogWindow{start: now}
		l.logged[id] = w
	}
	if w.lines >= maxExitLogLines {
		w.skipped++
		return
	}
	w.lines++
	l.log("sandbox: network exit refused", "sandbox", id, "kind", e.Kind, "host", e.Host, "detail", e.Detail)
}

func (l *exitLog) add(id string, e proxy.Event, now time.Time) {
	e.Host, e.Detail = clipExit(e.Host, maxExitHost), clipExit(e.Detail, maxExitDetail)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logRefusal(id, e, now)
	if l.byID == nil {
		l.byID = map[string][]ExitEventView{}
	}
	list := l.byID[id]
	for i := range list {
		if list[i].Kind == e.Kind && list[i].Host == e.Host {
			v := list[i]
			v.Count++
			v.Last, v.Detail = now, e.Detail
			list = append(slices.Delete(list, i, i+1), v)
			l.byID[id] = list
			return
		}
	}
	if list == nil && len(l.byID) >= maxExitSandboxes {
		l.dropOldest()
	}
	list = append(list, ExitEventView{Kind: e.Kind, Host: e.Host, Detail: e.Detail, Count: 1, Last: now})
	if len(list) > maxExitEvents {
		list = list[len(list)-maxExitEvents:]
	}
	l.byID[id] = list
}

// dropOldest forgets the sandbox whose newest event is the oldest.
func (l *exitLog) dropOldest() {
	var oldest string
	var at time.Time
	for id, list := range l.byID {
		if last := list[len(list)-1].Last; oldest == "" || last.Before(at) {
			oldest, at = id, last
		}
	}
	delete(l.byID, oldest)
}

// events are a sandbox's exit events, newest first.
func (l *exitLog) events(id string) []ExitEventView {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	list := slices.Clone(l.byID[id])
	slices.Reverse(list)
	return list
}

// sandboxExitEvents are what sandboxView shows of a sandbox's exit.
func (r *Runtime) sandboxExitEvents(id string) []ExitEventView {
	if set := r.sandboxes(); set != nil {
		return set.exits.events(id)
	}
	return nil
}
