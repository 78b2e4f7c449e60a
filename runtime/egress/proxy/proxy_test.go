package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/runtime/egress/allowlist"
)

// startProxy serves p on a unix socket and returns an HTTP client that
// uses it as its proxy, trusting p's authority and roots.
func startProxy(t testing.TB, cfg Config) (*Proxy, *http.Client) {
	t.Helper()
	p, sock := serveProxy(t, cfg)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CACertPEM())
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "exit"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}
	return p, &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// serveProxy serves a proxy of cfg on a unix socket and returns the socket's path.
func serveProxy(t testing.TB, cfg Config) (*Proxy, string) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(p.Close)
	return p, sock
}

func rules(t testing.TB, entries ...string) *allowlist.Rules {
	r, err := allowlist.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProxyJudgesEveryHopAndGuardsPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://127.0.0.2:1/", http.StatusFound)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	var mu sync.Mutex
	var events []Event
	_, c := startProxy(t, Config{Allow: rules(t, "127.0.0.1/32"), AllowPrivate: true, Log: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	resp, err := c.Get(srv.URL + "/redirect")
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("listed range: %v %v", resp, err)
	}
	resp, err = c.Get(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the redirect's target is judged again and refused: %v %v", resp, err)
	}
	mu.Lock()
	if len(events) != 1 || events[0].Kind != EventRefused || events[0].Host != "127.0.0.2" {
		t.Fatalf("events %+v", events)
	}
	mu.Unlock()

	// Internet mode without --egress-allow-private: loopback refused.
	_, c = startProxy(t, Config{})
	resp, err = c.Get(srv.URL)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("loopback in Internet mode: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "--egress-allow-private") {
		t.Fatalf("refusal says %q", body)
	}
}

func TestMaskReaderAcrossReads(t *testing.T) {
	secret := "s3cr3t-token-value"
	src := strings.Repeat("x", 40000) + secret + "y" + secret[:5]
	r := maskReader(io.NopCloser(&slowReader{s: src, n: 7}), []string{secret})
	b, _ := io.ReadAll(r)
	if len(b) != len(src) || strings.Contains(string(b), secret) || !strings.Contains(string(b), strings.Repeat("*", len(secret))+"y"+secret[:5]) {
		t.Fatalf("masked %d bytes: ...%q", len(b), b[len(b)-40:])
	}
}

type slowReader struct {
	s string
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// BenchmarkExitRequest: one GET straight to a loopback server, through the
// exit (absolute-form HTTP), and through the exit with TLS terminated and a
// credential added (the upstream over TLS, verified), on kept-alive
// connections each.
func BenchmarkExitRequest(b *testing.B) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer secure.Close()
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	get := func(b *testing.B, c *http.Client, u string) {
		for i := 0; i < b.N; i++ {
			resp, err := c.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { get(b, plain.Client(), plain.URL) })
	b.Run("direct_tls", func(b *testing.B) { get(b, secure.Client(), secure.URL) })
	_, c := startProxy(b, Config{Allow: rules(b, "127.0.0.1/32"), AllowPrivate: true})
	b.Run("exit_http", func(b *testing.B) { get(b, c, plain.URL) })
	_, c = startProxy(b, Config{Allow: rules(b, "127.0.0.1/32"), AllowPrivate: true, RootCAs: roots,
		HasCredential: func(context.Context, string) bool { return true },
		Attach: func(context.Context, string) (func(*http.Request), error) {
			return func(r *http.Request) { r.Header.Set("Authorization", "Bearer bench-token") }, nil
		}})
	b.Run("exit_tls_credential", func(b *testing.B) { get(b, c, secure.URL) })
}

// TestNextRequestWaitsForTheLastBody: a server that answers a large POST
// before reading its body. The exit's transport is still sending the body
// when the answer comes back, so the next request on the sandbox's
// connection is read only once the body is done. Before, the two read the
// connection at once: a panic in bufio (a CI run), or the body's bytes
// taken for a request.
func TestNextRequestWaitsForTheLastBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answered "+r.URL.Path) // the body left unread
	}))
	defer srv.Close()
	_, sock := serveProxy(t, Config{Allow: rules(t, "127.0.0.1/32"), AllowPrivate: true})
	body := strings.Repeat("x", 8<<20)
	for i := range 5 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		sent := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c, "POST "+srv.URL+"/first HTTP/1.1\r\nHost: "+strings.TrimPrefix(srv.URL, "http://")+
				"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			sent <- err
		}()
		br := bufio.NewReader(c)
		read := func(want string) {
			t.Helper()
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("round %d: waiting for %q: %v", i, want, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != want {
				t.Fatalf("round %d: the exit answered %d %q, want %q", i, resp.StatusCode, got, want)
			}
		}
		read("answered /first")
		if err := <-sent; err != nil {
			t.Fatalf("round %d: sending the body: %v", i, err)
		}
		if _, err := io.WriteString(c, "GET "+srv.URL+"/second HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		read("answered /second")
		c.Close()
	}
}
