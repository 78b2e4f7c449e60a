package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/web"
)

// Failed sign-ins for one account are throttled: past the limit even the
// right password waits, the answer says how long, and the audit log has it.
func TestSignInThrottledPerAccount(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	b := e.browser()
	limit := runtime.DefaultLoginThrottle.PerAccount
	for i := range limit {
		if resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d answered %d", i+1, resp.StatusCode)
		}
	}
	resp, page := b.post("/login", url.Values{"email": {"Owner@example.com"}, "password": {password}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(page, "too many failed sign-ins") {
		t.Fatalf("sign-in past the limit answered %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var acts []runtime.ActionView
	e.api(tok, "GET", "/actions?verb=User.login&verdict=refused", nil, &acts)
	found := false
	for _, a := range acts {
		found = found || strings.Contains(a.Reason, "too many failed sign-ins")
	}
	if !found {
		t.Fatalf("the throttled sign-in is not on the audit log: %+v", acts)
	}
	// Once the window has passed, the right password signs in again.
	e.clock.Advance(runtime.DefaultLoginThrottle.Window)
	if resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in after the window answered %d", resp.StatusCode)
	}
}

// A throttled sign-in costs the server no password check, so a client can
// send thousands a second: the audit log records the first refusal of each
// step (window ÷ limit), not every one, so the form cannot fill the disk.
func TestSignInThrottledRecordsBoundedRefusals(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	b := e.browser()
	cfg := runtime.DefaultLoginThrottle
	for range cfg.PerAccount {
		b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}})
	}
	throttled := func() int {
		t.Helper()
		var acts []runtime.ActionView
		if st := e.api(tok, "GET", "/actions?verb=User.login&verdict=refused", nil, &acts); st != http.StatusOK {
			t.Fatalf("Action.list: %d", st)
		}
		n := 0
		for _, a := range acts {
			if strings.Contains(a.Reason, "too many failed sign-ins") {
				n++
			}
		}
		return n
	}
	for i := range 30 {
		if resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}}); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("throttled sign-in %d answered %d", i+1, resp.StatusCode)
		}
	}
	if n := throttled(); n != 1 {
		t.Fatalf("30 throttled sign-ins left %d records; want 1 per step", n)
	}
	e.clock.Advance(cfg.Window / time.Duration(cfg.PerAccount) / 2)
	if resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}}); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("throttled sign-in a step later answered %d", resp.StatusCode)
	}
	// A step on, one attempt gets through (and fails), and the next
	// refusal is recorded again.
	e.clock.Advance(cfg.Window / time.Duration(cfg.PerAccount) / 2)
	if resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a sign-in a step later answered %d; want 401", resp.StatusCode)
	}
	b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}})
	if n := throttled(); n != 2 {
		t.Fatalf("a step later the audit log has %d throttled sign-ins; want 2", n)
	}
}

// One address trying many accounts is throttled too.
func TestSignInThrottledPerAddress(t *testing.T) {
	e := newEnv(t)
	e.owner()
	b := e.browser()
	for i := range runtime.DefaultLoginThrottle.PerAddress {
		email := "nobody" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "@example.com"
		if resp, _ := b.post("/login", url.Values{"email": {email}, "password": {"wrong"}}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d answered %d", i+1, resp.StatusCode)
		}
	}
	resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("sign-in from a throttled address answered %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// After sign-in, `next` leads only to a path of this site: a control
// character or a backslash (which browsers drop or read as a slash) sends
// the person home instead.
func TestSignInNextRefusesControlAndBackslash(t *testing.T) {
	e := newEnv(t)
	e.owner()
	for next, want := range map[string]string{
		"/people":              "/people",
		"/\t/evil.example":     "/",
		"/\n/evil.example":     "/",
		"/\\evil.example":      "/",
		"/people\\..\\x":       "/",
		"https://evil.example": "/",
	} {
		b := e.browser()
		resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}, "next": {next}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("next %q led to %d %q, want %q", next, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}

// The Bearer scheme is case-insensitive, as HTTP's auth schemes are.
func TestBearerSchemeCaseInsensitive(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/agents", nil)
		req.Header.Set("Authorization", scheme+" "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d", scheme, resp.StatusCode)
		}
	}
}

// Requests addressed to a host this server is not (DNS rebinding) are
// refused; the base URL's host, --allowed-hosts and loopback names pass.
func TestHostHeaderChecked(t *testing.T) {
	rt := runtime.New(modelstest.Open(t), runtime.Options{Log: quiet})
	key := []byte("0123456789abcdef0123456789abcdef")
	srv := httptest.NewServer(web.New(rt, web.Config{BaseURL: "https://subako.example.com", AllowedHosts: []string{"console.internal"},
		CookieHashKey: key, CookieBlockKey: key, Log: quiet}))
	defer srv.Close()
	for host, want := range map[string]int{
		"subako.example.com":                  200,
		"SUBAKO.example.com.:443":             200,
		"console.internal:8080":               200,
		"localhost:8080":                      200,
		"127.0.0.1":                           200,
		"[::1]:8080":                          200,
		"rebind.attacker.example":             http.StatusMisdirectedRequest,
		"subako.example.com.attacker.example": http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/login", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s answered %d, want %d", host, resp.StatusCode, want)
		}
	}
	// "*" turns the check off, for a proxy that checks Host itself.
	open := httptest.NewServer(web.New(rt, web.Config{BaseURL: "https://subako.example.com", AllowedHosts: []string{"*"},
		CookieHashKey: key, CookieBlockKey: key, Log: quiet}))
	defer open.Close()
	req, _ := http.NewRequest(http.MethodGet, open.URL+"/login", nil)
	req.Host = "anything.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("with --allowed-hosts '*' another Host answered %v %v", resp, err)
	}
	// Probes address a pod by its IP: health checks answer whatever the Host.
	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
	req.Host = "10.1.2.3:8080"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz with a pod IP: %v %v", resp, err)
	}
}

// /metrics needs an owner's or admin's token or the metrics token; with its
// own address it is not on the console's at all.
func TestMetricsNeedAToken(t *testing.T) {
	rt := runtime.New(modelstest.Open(t), runtime.Options{Log: quiet})
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	handler = web.New(rt, web.Config{BaseURL: srv.URL, MetricsToken: "scrape-secret-1234", CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	e := &env{t: t, srv: srv, rt: rt, clock: &clock{now: time.Now()}}
	owner := e.owner()
	ownerTok := owner.token()
	memberTok := e.person(owner, "member@example.com", "member").token()
	for auth, want := range map[string]int{
		"":                          http.StatusUnauthorized,
		"Bearer wrong":              http.StatusUnauthorized,
		"Bearer " + memberTok:       http.StatusUnauthorized,
		"Bearer " + ownerTok:        200,
		"bearer scrape-secret-1234": 200,
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/metrics with %q answered %d, want %d", auth, resp.StatusCode, want)
		}
	}
	app, metrics := web.NewWithMetrics(rt, web.Config{BaseURL: srv.URL, MetricsElsewhere: true, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, srv.URL+"/metrics", nil))
	if rec.Code == 200 || strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("/metrics on the console with --metrics-addr answered %d with the figures", rec.Code)
	}
	rec = httptest.NewRecorder()
	metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("the separate metrics handler answered %d", rec.Code)
	}
}
