package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/oauth/oauthtest"
	"github.com/subako/subako/web"
)

// oauthWorld is Subako (its logs kept, at debug level) with a signed-in owner,
// a vault, and an OAuth authorization server with its protected MCP server.
type oauthWorld struct {
	*env
	logs    *logtest.Buffer
	fn      *fnEnv  // with functions only
	browser *client // the owner's cookie browser
	owner   string  // the owner's API token
	vault   string  // the vault's id
	as      *oauthtest.Server
	// seen is every page and answer Subako gave during the test, by where.
	seenMu sync.Mutex
	seen   map[string]string
	// extra are more values to search for (a secret typed in a refused form).
	extra []oauthtest.Secret
}

const oauthVaultName = "customer-a"

func newOAuthWorld(t *testing.T, opts oauthtest.Options, functions ...string) *oauthWorld {
	t.Helper()
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(log)
	t.Cleanup(func() { slog.SetDefault(prev) })
	clk := &clock{now: time.Now().UTC()}
	rt := runtime.New(modelstest.Open(t), runtime.Options{Clock: clk, Log: log, AllowPrivateEgress: true})
	t.Cleanup(rt.Close)
	var mods fntest.Modules
	var eng *fn.Engine
	if len(functions) > 0 {
		mods = fntest.Build(t)
		var err error
		// The resource server listens on 127.0.0.1.
		if eng, err = fn.New(context.Background(), fn.Config{DataDir: mods.DataDir, AllowPrivate: true}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close(context.Background()) })
		rt.SetFunctionEngine(eng)
	}
	e := &env{t: t, rt: rt, clock: clk}
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: e.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: log})
	t.Cleanup(e.srv.Close)
	w := &oauthWorld{env: e, logs: logs, seen: map[string]string{}}
	w.browser = e.owner()
	w.owner = w.browser.token()
	w.vault = w.browser.createVault(oauthVaultName)
	opts.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	w.as = oauthtest.Start(t, opts)
	if len(functions) > 0 {
		w.fn = &fnEnv{env: e, mods: mods, engine: eng, logs: logs, browser: w.browser, owner: w.owner}
		for _, name := range functions {
			w.fn.install(name)
		}
	}
	return w
}

// callbackURL is the redirect URI Subako registers (see notes/oauth.md).
func (w *oauthWorld) callbackURL() string { return w.srv.URL + "/vaults/oauth/callback" }

// keep records a page or answer for the secret search.
func (w *oauthWorld) keep(where, body string) {
	w.seenMu.Lock()
	defer w.seenMu.Unlock()
	w.seen[fmt.Sprintf("%03d %s", len(w.seen), where)] = body
}

// page fetches a console page with the owner's cookie browser and keeps it.
func (w *oauthWorld) page(path string) string {
	w.t.Helper()
	resp, body := w.browser.get(path)
	if resp.StatusCode != 200 {
		w.t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	w.keep("page "+path, body)
	return body
}

// apiGet calls the JSON API as the owner and keeps the answer.
func (w *oauthWorld) apiGet(path string) string {
	w.t.Helper()
	st, body := w.rawAPI(w.owner, "GET", path, "")
	if st != 200 {
		w.t.Fatalf("GET /api/v1%s: %d %s", path, st, body)
	}
	w.keep("api "+path, string(body))
	return string(body)
}

// publish makes an agent version with config (MCP_URL and ORIGIN replaced).
func (w *oauthWorld) publish(config string) string {
	w.t.Helper()
	_, draft := w.agentWithDraft(w.owner)
	config = strings.NewReplacer("MCP_URL", w.as.MCPURL, "ORIGIN", w.as.ResourceURL).Replace(config)
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", config); st != 200 {
		w.t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := w.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		w.t.Fatalf("publish: %d", st)
	}
	return draft.ID
}

func (w *oauthWorld) newSession(version string) session {
	w.t.Helper()
	var s session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": version, "vaults": []string{w.vault}, "title": "oauth"}, &s); st != 201 {
		w.t.Fatalf("Session.create: %d", st)
	}
	return s
}

// callTool runs a tool through ToolCall.create and keeps the answer.
func (w *oauthWorld) callTool(s session, tool string, input any) call {
	w.t.Helper()
	var c call
	st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": tool, "input": input, "model": "test-model", "wait_seconds": 20}, &c)
	if st != 200 {
		w.t.Fatalf("ToolCall.create %s: %d %+v", tool, st, c)
	}
	w.keep("tool call "+tool, fmt.Sprintf("%+v %s", c, c.Output))
	return c
}

// actions counts the audit trail's rows.
func (w *oauthWorld) actions() int64 {
	w.t.Helper()
	var n int64
	if err := w.rt.DB().Table("actions").Count(&n).Error; err != nil {
		w.t.Fatal(err)
	}
	return n
}

// dumpDatabase renders every row of every table as text.
func (w *oauthWorld) dumpDatabase() string {
	w.t.Helper()
	db := w.rt.DB()
	tables, err := db.Migrator().GetTables()
	if err != nil {
		w.t.Fatal(err)
	}
	var out strings.Builder
	for _, table := range tables {
		rows, err := db.Table(table).Rows()
		if err != nil {
			w.t.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				w.t.Fatalf("scan %s: %v", table, err)
			}
			fmt.Fprintf(&out, "%s:", table)
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&out, " %s=%v", cols[i], v)
			}
			out.WriteByte('\n')
		}
		rows.Close()
	}
	return out.String()
}

// searchSecrets looks for every value the OAuth servers issued or were sent
// (access and refresh tokens, codes, verifiers, client secrets) in every page
// and answer kept, Subako's log, the database and the exports.
func (w *oauthWorld) searchSecrets(exports ...string) {
	w.t.Helper()
	secrets := w.as.Tokens()
	kinds := map[string]int{}
	for _, s := range secrets {
		kinds[s.Kind]++
	}
	secrets = append(secrets, w.extra...)
	if kinds["access_token"] == 0 {
		w.t.Fatalf("the search has nothing to look for: %v", kinds)
	}
	corpus := map[string]string{"log": w.logs.String(), "database": w.dumpDatabase()}
	for _, path := range exports {
		resp, body := w.browser.get(path)
		if resp.StatusCode != 200 {
			w.t.Fatalf("export %s: %d", path, resp.StatusCode)
		}
		corpus["export "+path] = body
	}
	w.seenMu.Lock()
	for k, v := range w.seen {
		corpus[k] = v
	}
	w.seenMu.Unlock()
	if len(corpus["log"]) == 0 || len(corpus["database"]) == 0 {
		w.t.Fatal("nothing was logged or stored: the search would prove nothing")
	}
	for _, s := range secrets {
		for where, text := range corpus {
			if strings.Contains(text, s.Value) {
				i := strings.Index(text, s.Value)
				w.t.Errorf("the %s is in %s: …%s…", s.Kind, where, text[max(0, i-120):min(len(text), i+len(s.Value)+40)])
			}
		}
	}
	w.t.Logf("searched %d secrets (%v) in %d texts", len(secrets), kinds, len(corpus))
}

// chrome is Chromium signed in as the owner.
type chrome struct {
	t   *testing.T
	w   *oauthWorld
	ctx context.Context
}

func (w *oauthWorld) signIn(t *testing.T) *chrome {
	t.Helper()
	c := &chrome{t: t, w: w, ctx: browserCtx(t)}
	c.run("sign in",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
	)
	return c
}

// run does the steps within 30 s; when they fail it says where the browser
// is and what the page says.
func (c *chrome) run(what string, a ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, a...); err != nil {
		loc, _ := chromedp.Run(c.ctx, chromedp.Location())
		body, _ := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		logs := c.w.logs.String()
		c.t.Fatalf("%s: %v\nthe browser is at %s, showing:\n%s\nSubako's log ends:\n%s", what, err, loc, body, logs[max(0, len(logs)-3000):])
	}
}

// html returns the page Chromium shows, keeping it when it is Subako's.
func (c *chrome) html(where string) string {
	c.t.Helper()
	loc, _ := chromedp.Run(c.ctx, chromedp.Location())
	doc, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		c.t.Fatalf("read the page (%s): %v", where, err)
	}
	if strings.HasPrefix(loc, c.w.srv.URL) {
		c.w.keep("chromium "+where+" "+loc, loc+"\n"+doc)
	}
	return doc
}

// connect fills the vault page's Connect with OAuth form, approves on the
// authorization server's consent page and waits to be back on the vault page.
func (c *chrome) connect(clientID, clientSecret string) {
	c.t.Helper()
	w := c.w
	acts := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(w.srv.URL + "/vaults/" + w.vault),
		chromedp.WaitVisible(css(`[data-testid=oauth-connect-form]`)),
		chromedp.SendKeys(css(`[data-testid=oauth-prefix]`), w.as.MCPURL),
	}
	if clientID != "" {
		acts = append(acts, chromedp.SendKeys(css(`[data-testid=oauth-client-id]`), clientID))
	}
	if clientSecret != "" {
		acts = append(acts, chromedp.SendKeys(css(`[data-testid=oauth-client-secret]`), clientSecret))
	}
	acts = append(acts, chromedp.Click(css(`[data-testid=oauth-connect]`)), chromedp.WaitVisible(css(`#approve`)))
	c.run("Connect with OAuth, up to the consent page", acts...)
	c.approve()
}

// approve clicks Approve on the consent page and waits for the vault page.
func (c *chrome) approve() {
	c.t.Helper()
	c.run("approve on the consent page",
		chromedp.WaitVisible(css(`#approve`)),
		chromedp.Click(css(`#approve`)),
		chromedp.WaitVisible(css(`[data-testid=credential-status]`)),
	)
	c.html("vault page after connecting")
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// visibleText is a page without its tags, spaces collapsed.
func visibleText(page string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(page, " "))), " ")
}

// startConnect posts the Connect with OAuth form as a cookie browser and
// returns where Subako sends the browser (the authorization request).
func (w *oauthWorld) startConnect(b *client, clientID, clientSecret string) string {
	w.t.Helper()
	resp, page := b.post("/vaults/"+w.vault+"/oauth/connect", url.Values{"prefix": {w.as.MCPURL}, "client_id": {clientID}, "client_secret": {clientSecret}})
	w.keep("connect answer", page)
	to := resp.Header.Get("Location")
	if to == "" {
		if m := regexp.MustCompile(`url=([^"]+)"`).FindStringSubmatch(page); m != nil {
			to = html.UnescapeString(m[1])
		}
	}
	if !strings.HasPrefix(to, w.as.AuthorizeURL+"?") {
		w.t.Fatalf("Connect with OAuth answered %d, going to %q, not the authorization endpoint:\n%s", resp.StatusCode, to, visibleText(page))
	}
	return to
}

// approveHTTP approves an authorization request at the server (auto-approve
// by the consent form's post) and returns the redirect back to Subako.
func (w *oauthWorld) approveHTTP(authURL string) string {
	w.t.Helper()
	u, _ := url.Parse(authURL)
	form := u.Query()
	form.Set("decision", "approve")
	nr := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := nr.PostForm(w.as.AuthorizeURL, form)
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(back, w.callbackURL()+"?") {
		w.t.Fatalf("approving answered %d, to %q", resp.StatusCode, back)
	}
	return back
}

// connectHTTP connects the vault to the MCP server with the owner's cookie
// browser, approving at the server by its consent form's post (for tests
// about what happens after connecting; the browser tests click through).
func (w *oauthWorld) connectHTTP() {
	w.t.Helper()
	back := w.approveHTTP(w.startConnect(w.browser, "", ""))
	resp, page := w.browser.get(strings.TrimPrefix(back, w.srv.URL))
	w.keep("callback", page)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/vaults/"+w.vault {
		w.t.Fatalf("the callback answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// offered is Session.tools by name, kept for the secret search.
func (w *oauthWorld) offered(s session) map[string]string {
	w.t.Helper()
	st, body := w.rawAPI(s.Token, "GET", "/sessions/"+s.ID+"/tools", "")
	if st != 200 {
		w.t.Fatalf("Session.tools: %d %s", st, body)
	}
	w.keep("Session.tools", string(body))
	var ts []struct{ Name, Policy string }
	if err := json.Unmarshal(body, &ts); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, t := range ts {
		out[t.Name] = t.Policy
	}
	return out
}
