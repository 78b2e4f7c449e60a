package web_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/oauth/oauthtest"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// The network exit of a sandbox (docs/sandbox-egress.md), with real
// bubblewrap: the test's own DNS server names its servers on 127.0.0.1
// (the harness runs with --egress-allow-private), so nothing but addresses
// the test made is ever reached.

const exitTool = "sandbox__box__exec"

func exitConfig(allow ...string) string {
	b, _ := json.Marshal(allow)
	return `{"sandboxes": [{"name": "box", "environment": {"type": "platform", "release": "2026"},
  "network": {"type": "allowlist", "allow": ` + string(b) + `}, "default_policy": "allow"}]}`
}

// startExitDNS is a DNS server on 127.0.0.1 answering 127.0.0.1 for the
// names given ("*.x" for any name below x) and NXDOMAIN for the rest, and
// a resolver that asks only it.
func startExitDNS(t *testing.T, names ...string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	known := func(name string) bool {
		name = strings.TrimSuffix(strings.ToLower(name), ".")
		for _, n := range names {
			if n == name || (strings.HasPrefix(n, "*.") && strings.HasSuffix(name, n[1:])) {
				return true
			}
		}
		return false
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true}
			if !known(q.Name.String()) {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if rh.RCode == dnsmessage.RCodeSuccess && q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
			}
			out, _ := b.Finish()
			pc.WriteTo(out, from)
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// exitCert is a certificate for host signed by an authority of the
// test's own, and a pool trusting that authority: the "real" certificate
// the exit verifies.
func exitCert(t *testing.T, host string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test authority"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: leafKey}, pool
}

// newExitWorld is an OAuth world (a vault, an authorization server) whose
// runtime runs real sandboxes with the test's resolver and authorities.
func newExitWorld(t *testing.T, opts oauthtest.Options, roots *x509.CertPool, resolver *net.Resolver) *oauthWorld {
	t.Helper()
	w := newOAuthWorld(t, opts)
	base := sandboxDirs(t)
	driver, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	archives, err := archive.NewLocal(filepath.Join(base, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	err = w.rt.StartSandboxes(t.Context(), runtime.SandboxOptions{Driver: driver, Archives: archives,
		Dir: filepath.Join(base, "machines"), SkillsDir: filepath.Join(base, "skills"), EgressRootCAs: roots, EgressResolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.rt.StopSandboxes(context.Background()) })
	return w
}

func (w *oauthWorld) run(s session, command string) execOutput {
	w.t.Helper()
	c := w.callTool(s, exitTool, map[string]any{"command": command, "timeout_secs": 30})
	if c.Status != "succeeded" {
		w.t.Fatalf("exec %q: %+v", command, c)
	}
	var out execOutput
	if err := json.Unmarshal(c.Output, &out); err != nil {
		w.t.Fatalf("exec output %s: %v", c.Output, err)
	}
	return out
}

func portOf(t *testing.T, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// An allowlist sandbox reaches the names it lists (a wildcard too) through
// its exit, is refused others (HTTP and CONNECT, logged on its record), DNS
// answers only listed names, and nothing goes around the proxy.
func TestSandboxExitAllowlist(t *testing.T) {
	resolver := startExitDNS(t, "allowed.test", "other.test", "*.wild.test")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.WriteString(rw, "hello from "+r.Host)
	}))
	defer srv.Close()
	port := portOf(t, srv.URL)
	w := newExitWorld(t, oauthtest.Options{}, nil, resolver)
	s := w.newSession(w.publish(exitConfig("allowed.test", "*.wild.test")))

	out := w.run(s, "curl -sS -m 10 http://allowed.test:"+port+"/; echo; curl -sS -m 10 http://deep.a.wild.test:"+port+"/")
	if out.ExitCode != 0 || !strings.Contains(out.Stdout, "hello from allowed.test:"+port) || !strings.Contains(out.Stdout, "hello from deep.a.wild.test:"+port) {
		t.Fatalf("listed hosts through the exit: %+v", out)
	}
	out = w.run(s, "curl -sS -m 10 -o /dev/null -w '%{http_code}' http://other.test:"+port+"/; echo; curl -sS -m 10 https://wild.test:"+port+"/; echo rc=$?")
	if !strings.HasPrefix(out.Stdout, "403\n") || !strings.Contains(out.Stdout, "rc=56") && !strings.Contains(out.Stdout, "rc=35") {
		t.Fatalf("unlisted hosts (HTTP, then CONNECT to the wildcard's own domain) should be refused with 403: %+v", out)
	}
	out = w.run(s, "getent hosts allowed.test; echo rc=$?; getent hosts other.test; echo rc=$?; cat /etc/resolv.conf")
	if !strings.Contains(out.Stdout, "127.0.0.1") || !strings.Contains(out.Stdout, "allowed.test\nrc=0\nrc=2\n") {
		t.Fatalf("DNS should answer the listed name and not the other: %+v", out)
	}
	out = w.run(s, "curl -sS -m 5 --noproxy '*' http://127.0.0.1:"+port+"/; echo rc=$?; env | grep -i _proxy= | sort")
	if strings.Contains(out.Stdout, "hello from") || strings.Contains(out.Stdout, "rc=0") || !strings.Contains(out.Stdout, "HTTPS_PROXY=http://127.0.0.1:3128") {
		t.Fatalf("a direct connection should find no network, and the proxy be in the environment: %+v", out)
	}

	var list []runtime.SandboxView
	if st := w.api(w.owner, "GET", "/sandboxes?session="+s.ID, nil, &list); st != 200 || len(list) != 1 {
		t.Fatalf("Sandbox.list: %d %+v", st, list)
	}
	got := map[string]bool{}
	for _, e := range list[0].Exit {
		got[e.Kind+" "+e.Host] = true
	}
	for _, want := range []string{"refused other.test", "refused wild.test", "dns_refused other.test"} {
		if !got[want] {
			t.Errorf("the sandbox's record lacks %q: %+v", want, list[0].Exit)
		}
	}
	if list[0].Network != "allowlist" {
		t.Errorf("network %q, want allowlist", list[0].Network)
	}
	page := w.page("/sessions/" + s.ID + "/sandboxes")
	if !strings.Contains(page, `data-testid="sandbox-exit"`) || !strings.Contains(page, "DNS refused") || !strings.Contains(page, "other.test") || !strings.Contains(page, "Allowlist") {
		t.Errorf("the Sandboxes tab does not show what the exit refused:\n%s", page)
	}
}

// A credential of the session's vault is added at the exit to an HTTPS
// request (TLS terminated with the sandbox's own authority, the host's real
// certificate verified), an echo of it is masked, and its value is nowhere
// in the sandbox: environment, files, or the memory of its processes.
func TestSandboxExitAddsCredential(t *testing.T) {
	cert, roots := exitCert(t, "private.test")
	seen := make(chan string, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Authorization")
		io.WriteString(rw, "private content; you sent "+r.Header.Get("Authorization"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	port := portOf(t, srv.URL)
	resolver := startExitDNS(t, "private.test")
	w := newExitWorld(t, oauthtest.Options{}, roots, resolver)
	secretBytes := make([]byte, 16)
	rand.Read(secretBytes)
	secret := "exit-secret-" + hex.EncodeToString(secretBytes)
	prefix := "https://private.test:" + port + "/"
	if resp, page := w.browser.post("/vaults/"+w.vault+"/credentials", url.Values{"prefix": {prefix}, "type": {"bearer"}, "secret": {secret}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential: %d\n%s", resp.StatusCode, page)
	}
	s := w.newSession(w.publish(exitConfig("private.test")))

	out := w.run(s, "curl -sS -m 10 https://private.test:"+port+"/org/repo.git/info/refs")
	if out.ExitCode != 0 || !strings.Contains(out.Stdout, "private content; you sent ****") {
		t.Fatalf("the request through the exit: %+v", out)
	}
	if got := <-seen; got != "Bearer "+secret {
		t.Fatalf("the server saw Authorization %q, want the vault's bearer token", got)
	}
	if strings.Contains(out.Stdout+out.Stderr, secret) {
		t.Fatalf("the echoed credential reached the sandbox: %+v", out)
	}

	// A request in flight while the host reads the memory of every process
	// of the sandbox (the agent, the shell, curl's parent).
	done := make(chan execOutput, 1)
	go func() {
		done <- w.run(s, "curl -sS -m 10 -o /workspace/fetched https://private.test:"+port+"/again; sleep 4")
	}()
	select {
	case <-seen:
	case <-time.After(20 * time.Second):
		t.Fatal("the second request never reached the server")
	}
	time.Sleep(300 * time.Millisecond)
	if pids := sandboxPIDs(t); len(pids) == 0 {
		t.Fatal("found no process of the sandbox to search")
	} else {
		for _, pid := range pids {
			if where := searchMemory(pid, []byte(secret)); where != "" {
				t.Fatalf("the credential is in the memory of sandbox process %d (%s)", pid, where)
			}
		}
	}
	<-done
	half := len(secret) / 2
	out = w.run(s, fmt.Sprintf(`A=%s; B=%s; S="$A$B"; env | grep -c -F -- "$S"; grep -rlsF -- "$S" /workspace /tmp /etc /.subako /dev/shm; echo searched`, secret[:half], secret[half:]))
	if out.Stdout != "0\nsearched\n" {
		t.Fatalf("the credential was found in the sandbox's environment or files: %+v", out)
	}

	var list []runtime.SandboxView
	if st := w.api(w.owner, "GET", "/sandboxes?session="+s.ID, nil, &list); st != 200 || len(list) != 1 {
		t.Fatalf("Sandbox.list: %d", st)
	}
	b, _ := json.Marshal(list)
	if !strings.Contains(string(b), `"kind":"credential_added","host":"private.test"`) || strings.Contains(string(b), secret) {
		t.Fatalf("the record should say a credential was added, without it: %s", b)
	}
}

// sandboxPIDs are the host pids of the processes of this test's sandboxes:
// the agents and what they run (found by their environment).
func sandboxPIDs(t *testing.T) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(env, []byte("SUBAKO_SANDBOX_AGENT=1")) || bytes.Contains(env, []byte("/.subako/egress/ca-bundle.pem")) {
			out = append(out, pid)
		}
	}
	return out
}

// searchMemory reads every readable mapping of pid and says where needle is.
func searchMemory(pid int, needle []byte) string {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return ""
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return ""
	}
	defer mem.Close()
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[1], "r") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end-start > 1<<30 {
			continue
		}
		buf := make([]byte, end-start)
		n, _ := mem.ReadAt(buf, int64(start))
		if bytes.Contains(buf[:n], needle) {
			return line
		}
	}
	return ""
}

// An OAuth credential (client credentials) is used at the exit, and
// refreshed there when the API refuses an expired token: one new token.
func TestSandboxExitRefreshesOAuth(t *testing.T) {
	const clientSecret = "machine-secret-exit-41e6"
	resolver := startExitDNS(t, "oauth.test")
	w := newExitWorld(t, oauthtest.Options{Clients: []oauthtest.Client{{ID: "machine", Secret: clientSecret}}}, nil, resolver)
	port := portOf(t, w.as.ResourceURL)
	form := url.Values{"prefix": {"http://oauth.test:" + port}, "type": {"client_credentials"}, "token_url": {w.as.TokenURL},
		"client_id": {"machine"}, "secret": {clientSecret}, "scopes": {"api"}}
	if resp, page := w.browser.post("/vaults/"+w.vault+"/credentials", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential (client credentials): %d\n%s", resp.StatusCode, page)
	}
	s := w.newSession(w.publish(exitConfig("oauth.test")))
	api := "http://oauth.test:" + port + "/api/whoami"
	out := w.run(s, "curl -sS -m 10 "+api)
	if !strings.Contains(out.Stdout, "hello machine") {
		t.Fatalf("the API through the exit with the client-credentials token: %+v", out)
	}
	issued := w.as.Stats().ClientCredentials
	w.as.ExpireAccessTokens()
	out = w.run(s, "curl -sS -m 10 "+api)
	if !strings.Contains(out.Stdout, "hello machine") {
		t.Fatalf("the API after the token expired: %+v", out)
	}
	if got := w.as.Stats().ClientCredentials - issued; got != 1 {
		t.Fatalf("%d new tokens at the exit, want 1", got)
	}
	for _, tok := range w.as.Tokens() {
		if tok.Value != "" && strings.Contains(out.Stdout+out.Stderr, tok.Value) {
			t.Fatalf("a %s reached the sandbox", tok.Kind)
		}
	}
}

// An Internet sandbox whose session has a credential goes out through the
// exit (the proxy in its environment; the exit's guard refuses this host's
// loopback whatever --egress-allow-private says, as the routes do); one
// whose session has none has no proxy, as before.
func TestSandboxExitInternetModeWithCredential(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "host secret") }))
	defer srv.Close()
	w := newExitWorld(t, oauthtest.Options{}, nil, nil)
	if resp, page := w.browser.post("/vaults/"+w.vault+"/credentials", url.Values{"prefix": {"https://api.example.com/"}, "type": {"bearer"}, "secret": {"internet-mode-secret-1"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential: %d\n%s", resp.StatusCode, page)
	}
	version := w.publish(strings.Replace(exitConfig(), `{"type": "allowlist", "allow": null}`, `{"type": "internet"}`, 1))
	s := w.newSession(version)
	out := w.run(s, "echo $HTTPS_PROXY; curl -sS -m 5 --noproxy '' "+srv.URL+"/")
	if !strings.HasPrefix(out.Stdout, "http://127.0.0.1:3128\n") || strings.Contains(out.Stdout, "host secret") || !strings.Contains(out.Stdout, "refused") {
		t.Fatalf("Internet mode with a credential: %+v", out)
	}
	var bare session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": version, "title": "bare"}, &bare); st != 201 {
		t.Fatalf("Session.create: %d", st)
	}
	if out := w.run(bare, "echo proxy=$HTTPS_PROXY"); out.Stdout != "proxy=\n" {
		t.Fatalf("Internet mode without credentials should have no proxy: %+v", out)
	}
}

// git clone of a private repository over HTTPS works in an allowlist
// sandbox while the token stays at the exit: the test's git server (git
// http-backend behind TLS) answers only requests carrying the vault's token.
func TestSandboxExitGitClonePrivate(t *testing.T) {
	repos := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", filepath.Join(repos, "src")},
		{"-C", filepath.Join(repos, "src"), "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "private history"},
		{"clone", "-q", "--bare", filepath.Join(repos, "src"), filepath.Join(repos, "repo.git")},
	} {
		if out, err := osexec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	const token = "git-exit-token-5b1f0c9e7a"
	backend := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}}
	cert, roots := exitCert(t, "git.test")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="git"`)
			http.Error(rw, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(rw, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	port := portOf(t, srv.URL)
	w := newExitWorld(t, oauthtest.Options{}, roots, startExitDNS(t, "git.test"))
	if resp, page := w.browser.post("/vaults/"+w.vault+"/credentials", url.Values{"prefix": {"https://git.test:" + port + "/"}, "type": {"bearer"}, "secret": {token}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential: %d\n%s", resp.StatusCode, page)
	}
	s := w.newSession(w.publish(exitConfig("git.test")))
	out := w.run(s, "git clone -q https://git.test:"+port+"/repo.git && git -C repo log --format=%s && A="+token[:9]+" && B="+token[9:]+` && grep -rlsF -- "$A$B" repo ~ /tmp; echo done`)
	if out.Stdout != "private history\ndone\n" || strings.Contains(out.Stdout+out.Stderr, token) {
		t.Fatalf("git clone through the exit: %+v", out)
	}
}
