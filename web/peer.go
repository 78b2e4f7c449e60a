package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/subako/subako/handlers"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
)

// Bounds of the internal channel's client: connecting, waiting for an
// answer's headers (an exec's come at once; its body streams for as long
// as the exec runs, bounded by the exec's own timeout and the caller's
// context), and the size of what it reads.
const (
	peerDialTimeout   = 5 * time.Second
	peerHeaderTimeout = sandbox.FilesTimeout + 10*time.Second
	peerMaxJSON       = 16 << 20
	peerMaxLine       = 64 << 20
)

// Peer is the runtime's SandboxPeer over the internal HTTP channel.
type Peer struct {
	secret string
	host   string // the Host every replica serves (the base URL's)
	client *http.Client
}

var _ runtime.SandboxPeer = (*Peer)(nil)

// NewPeer reaches other replicas with the shared secret; baseURL is the
// console's address, whose host every replica accepts.
func NewPeer(secret, baseURL string) *Peer {
	host := ""
	if u, err := url.Parse(baseURL); err == nil {
		host = u.Host
	}
	dialer := &net.Dialer{Timeout: peerDialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{DialContext: dialer.DialContext, ResponseHeaderTimeout: peerHeaderTimeout, DisableCompression: true,
		MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: peerDialTimeout}
	return &Peer{secret: secret, host: host, client: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (p *Peer) request(ctx context.Context, method, base, path string, q url.Values, body io.Reader) (*http.Request, error) {
	u := strings.TrimSuffix(base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.secret)
	if p.host != "" {
		req.Host = p.host
	}
	return req, nil
}

// do sends req; a failure to connect wraps ErrPeerNotReached (nothing ran).
func (p *Peer) do(req *http.Request) (*http.Response, error) {
	resp, err := p.client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w: %v", runtime.ErrPeerNotReached, err)
		}
		return nil, fmt.Errorf("forward to the replica holding the sandbox: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, errors.New("the replica holding the sandbox refused this replica's --internal-secret: give every replica the same one")
	}
	return resp, nil
}

// answer decodes a JSON answer into out, or the owner's error.
func answer(resp *http.Response, out any) error {
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, peerMaxJSON)
	if resp.StatusCode != http.StatusOK {
		var w struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.NewDecoder(body).Decode(&w); err != nil {
			return fmt.Errorf("the replica holding the sandbox answered %s", resp.Status)
		}
		var we handlers.WireError
		if json.Unmarshal(w.Error, &we) == nil && we.Detail != "" {
			return we.Err()
		}
		var text string
		_ = json.Unmarshal(w.Error, &text)
		return fmt.Errorf("the replica holding the sandbox answered %s: %s", resp.Status, text)
	}
	if err := json.NewDecoder(body).Decode(out); err != nil {
		return fmt.Errorf("read the answer of the replica holding the sandbox: %w", err)
	}
	return nil
}

// Exec runs e on the replica at base, relaying its live output.
func (p *Peer) Exec(ctx context.Context, base, verb string, e runtime.SandboxExec) (json.RawMessage, error) {
	grant, err := json.Marshal(e.Grant)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(handlers.ForwardedExec{Verb: verb, SessionID: e.SessionID, CallID: e.CallID, Grant: grant, Input: e.Input})
	if err != nil {
		return nil, err
	}
	req, err := p.request(ctx, http.MethodPost, base, "/internal/v1/exec", nil, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, answer(resp, nil)
	}
	defer resp.Body.Close()
	out := sandbox.OutputOf(ctx)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), peerMaxLine)
	for sc.Scan() {
		var l handlers.ExecLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("read the forwarded exec's answer: %w", err)
		}
		if l.Done {
			return l.Result, l.Error.Err()
		}
		if out != nil && l.Stream != "" {
			out(l.Stream, l.Data)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the replica running the sandbox stopped answering during the exec: %w", err)
	}
	return nil, errors.New("the replica running the sandbox ended its answer before the exec's result (did it stop?)")
}

func sandboxPath(id, rest string) string {
	return "/internal/v1/sandboxes/" + url.PathEscape(id) + rest
}

// Files lists one folder on the replica at base.
func (p *Peer) Files(ctx context.Context, base, verb, id, dir string) (sandbox.Listing, error) {
	var l sandbox.Listing
	req, err := p.request(ctx, http.MethodGet, base, sandboxPath(id, "/files"), url.Values{"dir": {dir}, "verb": {verb}}, nil)
	if err != nil {
		return l, err
	}
	resp, err := p.do(req)
	if err != nil {
		return l, err
	}
	return l, answer(resp, &l)
}

// ReadFile reads one file on the replica at base (at most the read cap).
func (p *Peer) ReadFile(ctx context.Context, base, verb, id, path string) ([]byte, sandbox.FileEntry, error) {
	var e sandbox.FileEntry
	req, err := p.request(ctx, http.MethodGet, base, sandboxPath(id, "/file"), url.Values{"path": {path}, "verb": {verb}}, nil)
	if err != nil {
		return nil, e, err
	}
	resp, err := p.do(req)
	if err != nil {
		return nil, e, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, e, answer(resp, nil)
	}
	defer resp.Body.Close()
	if b, err := base64.RawURLEncoding.DecodeString(resp.Header.Get(handlers.EntryHeader)); err == nil {
		_ = json.Unmarshal(b, &e)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, sandbox.MaxFileReadBytes+1))
	if err != nil {
		return nil, e, fmt.Errorf("read the file from the replica running the sandbox: %w", err)
	}
	if len(data) > sandbox.MaxFileReadBytes {
		return nil, e, fmt.Errorf("the replica running the sandbox sent over %d bytes", sandbox.MaxFileReadBytes)
	}
	return data, e, nil
}

// WriteFile writes one file on the replica at base.
func (p *Peer) WriteFile(ctx context.Context, base, verb, id, path string, body io.Reader) (sandbox.FileEntry, error) {
	var e sandbox.FileEntry
	req, err := p.request(ctx, http.MethodPut, base, sandboxPath(id, "/file"), url.Values{"path": {path}, "verb": {verb}},
		io.LimitReader(body, sandbox.MaxFileWriteBytes+1))
	if err != nil {
		return e, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := p.do(req)
	if err != nil {
		return e, err
	}
	return e, answer(resp, &e)
}

// Ports lists what listens in a sandbox on the replica at base.
func (p *Peer) Ports(ctx context.Context, base, verb, id string) ([]sandbox.ListenPort, error) {
	var ports []sandbox.ListenPort
	req, err := p.request(ctx, http.MethodGet, base, sandboxPath(id, "/ports"), url.Values{"verb": {verb}}, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.do(req)
	if err != nil {
		return nil, err
	}
	return ports, answer(resp, &ports)
}

// DialPort connects to a port of a sandbox on the replica at base: the
// answer's 101 turns the request's connection into the port's.
func (p *Peer) DialPort(ctx context.Context, base, verb, id string, port int) (net.Conn, error) {
	req, err := p.request(ctx, http.MethodGet, base, sandboxPath(id, "/ports/"+strconv.Itoa(port)), url.Values{"verb": {verb}}, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", handlers.PortUpgrade)
	resp, err := p.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, answer(resp, nil)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("the replica running the sandbox answered 101 without a connection")
	}
	return &upgradedConn{ReadWriteCloser: rwc}, nil
}

// upgradedConn is an upgraded HTTP connection as a net.Conn; deadlines
// are not supported (the preview's own timeouts bound it).
type upgradedConn struct{ io.ReadWriteCloser }

type peerAddr struct{}

func (peerAddr) Network() string { return "subako-peer" }
func (peerAddr) String() string  { return "replica" }

func (c *upgradedConn) LocalAddr() net.Addr              { return peerAddr{} }
func (c *upgradedConn) RemoteAddr() net.Addr             { return peerAddr{} }
func (c *upgradedConn) SetDeadline(time.Time) error      { return nil }
func (c *upgradedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *upgradedConn) SetWriteDeadline(time.Time) error { return nil }
