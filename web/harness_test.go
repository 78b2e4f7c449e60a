package web_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/web"
)

// clock is a settable Clock so expiry can be tested without waiting.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// env is a whole Subako server over a fresh database, reached over real HTTP.
type env struct {
	t     *testing.T
	srv   *httptest.Server
	rt    *runtime.Runtime
	clock *clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := modelstest.Open(t)
	clk := &clock{now: time.Now().UTC()}
	// The tests' MCP servers and fake APIs listen on 127.0.0.1.
	rt := runtime.New(db, runtime.Options{Clock: clk, Log: quiet, AllowPrivateEgress: true})
	e := &env{t: t, rt: rt, clock: clk}
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: e.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	t.Cleanup(e.srv.Close)
	return e
}

// client is one browser: a cookie jar and the same-origin header a browser sends.
type client struct {
	e    *env
	http *http.Client
}

func (e *env) browser() *client {
	jar, _ := cookiejar.New(nil)
	return &client{e: e, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (c *client) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	c.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.e.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method != http.MethodGet {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *client) get(path string) (*http.Response, string) {
	return c.do(http.MethodGet, path, nil, nil)
}
func (c *client) post(path string, form url.Values) (*http.Response, string) {
	return c.do(http.MethodPost, path, form, nil)
}

const password = "correct-horse-battery"

// owner creates the owner through the setup link and returns their browser.
func (e *env) owner() *client {
	e.t.Helper()
	token, ok, err := e.rt.EnsureSetupLink(e.t.Context())
	if err != nil || !ok {
		e.t.Fatalf("setup link: ok=%v err=%v", ok, err)
	}
	b := e.browser()
	resp, _ := b.post("/setup/"+token, url.Values{"email": {"owner@example.com"}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("setup answered %d", resp.StatusCode)
	}
	return b
}

var inviteLink = regexp.MustCompile(`/invite/(inv_[a-z0-9]+)`)

// person invites someone at an access level through the People page and
// returns their signed-in browser.
func (e *env) person(owner *client, email, access string) *client {
	e.t.Helper()
	_, page := owner.submit("/people/invite", url.Values{"email": {email}, "access": {access}})
	m := inviteLink.FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no invitation link on the People page:\n%s", page)
	}
	b := e.browser()
	resp, _ := b.post("/invite/"+m[1], url.Values{"password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("accepting the invitation answered %d", resp.StatusCode)
	}
	return b
}

// token creates an API token for a signed-in browser through the Tokens page.
func (c *client) token() string {
	c.e.t.Helper()
	_, page := c.submit("/tokens", url.Values{"name": {"test"}, "expires": {"1h"}})
	m := regexp.MustCompile(`sbk_[a-z0-9]+`).FindString(page)
	if m == "" {
		c.e.t.Fatalf("no token on the Tokens page:\n%s", page)
	}
	return m
}

// api calls the JSON API with a bearer token and decodes the answer.
func (e *env) api(token, method, path string, body any, out any) int {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.srv.URL+"/api/v1"+path, r)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, out); err != nil && len(b) > 0 {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// problem is the RFC 9457 body an API error carries.
type problem struct {
	Title             string `json:"title"`
	Status            int    `json:"status"`
	Code              string `json:"code"`
	Detail            string `json:"detail"`
	Field             string `json:"field"`
	MissingPermission string `json:"missing_permission"`
}

// quiet keeps expected refusals out of the test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// installTestFunction records a function package as installed, so configs can
// grant it before the functions capability installs real ones.
func (e *env) installTestFunction() {
	e.t.Helper()
	manifest := `{"name":"github","version":"1.0.0","tools":[{"name":"get_repo","description":"Read a repository","input_schema":{"type":"object"}}]}`
	err := e.rt.DB().Create(&models.FunctionPackage{ID: "fp_test", Name: "github", Version: "1.0.0", Manifest: manifest,
		WasmSHA256: "00", WasmSize: 1, CreatedAt: time.Now()}).Error
	if err != nil {
		e.t.Fatal(err)
	}
}

func waitABit() { time.Sleep(50 * time.Millisecond) }

// browserOf signs the owner in with a fresh browser.
func (e *env) browserOf() *client {
	e.t.Helper()
	b := e.browser()
	if resp, _ := b.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("owner login: %d", resp.StatusCode)
	}
	return b
}
