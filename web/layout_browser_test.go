package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox/local"
)

// consoleConfig grants an MCP server that asks first, a sandbox and the
// built-ins, so every page of the console has something to show.
const consoleConfig = `{"mcp_servers": [{"name": "everything", "url": "MCP_URL", "default_policy": "ask",
  "tool_rules": {"echo": "allow", "get-sum": "deny"}}],
  "sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
    "network": {"type": "none"}, "default_policy": "allow"}],
  "builtins": [{"name": "session"}, {"name": "ask_user"}]}`

// consoleWorld is a console with real data on every page: an agent with a
// published version, a session with tool calls (a sandbox exec, MCP calls),
// approvals decided and waiting, a running sandbox, usage and audit rows.
// It returns the paths of the pages to look at.
func consoleWorld(t *testing.T) (*world, []string) {
	t.Helper()
	w := newWorldWith(t, consoleConfig, runtime.Options{})
	startSandboxes(t, w.rt, sandboxDirs(t), local.Config{})
	s := w.titledSession("Refunds for ACME, with a title long enough to wrap on a phone")
	w.exec(s, "echo hello from the workbench")
	if st, c := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": strings.Repeat("a long message ", 20)}, 10); st != 200 {
		t.Fatalf("echo: %d %+v", st, c)
	}
	approver := w.person(w.browserOf(), "approver@example.com", "member")
	waiting := w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 20)
	ap := w.pending(w.owner, "", 1)[0]
	decideInConsole(approver, ap.ID, "approve", url.Values{"scope": {"call"}})
	<-waiting
	if st, _ := w.call(s.Token, s.ID, getEnv, map[string]any{}, 0); st != 202 {
		t.Fatalf("a second get-env, left waiting: %d", st)
	}
	w.sandboxOf(s) // the session's sandbox is up, for the Sandboxes pages
	var vs []struct{ ID string }
	w.api(w.owner, "GET", "/vaults", nil, &vs)
	var skill, draft struct{ ID string }
	sk := map[string]any{"name": "helper", "description": "A script", "files": []map[string]any{
		{"path": "bin/hello.sh", "content": "#!/bin/sh\necho hello from the skill\n", "mode": "0755"}}}
	if st := w.api(w.owner, "POST", "/skills", sk, &skill); st != 201 {
		t.Fatalf("Skill.create: %d", st)
	}
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	w.installTestFunction()
	// Usage over two days draws the Usage chart; a pending invitation lists on People.
	for i, kind := range []string{runtime.UsageFunctionSeconds, runtime.UsageMachineSeconds} {
		day := time.Now().UTC().AddDate(0, 0, i-1)
		if err := w.rt.RecordUsage(t.Context(), runtime.Usage{Kind: kind, SessionID: s.ID, AgentID: w.agent, Subject: "call_x",
			Quantity: 90, Unit: "second", Credits: 0.9, Start: day, End: day.Add(90 * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if st := w.api(w.owner, "POST", "/users", map[string]any{"email": "later@example.com", "access": "viewer"}, nil); st != 201 {
		t.Fatalf("User.invite: %d", st)
	}
	paths := []string{"/", "/agents", "/agents/" + w.agent, "/versions/" + w.version,
		"/versions/" + draft.ID, "/versions/" + draft.ID + "/diff?against=" + w.version, "/skills/" + skill.ID,
		"/skills/" + skill.ID + "/files/bin/hello.sh", "/functions/github/1.0.0",
		"/skills", "/sessions", "/sessions/" + s.ID,
		"/sessions/" + s.ID + "/sandboxes", "/approvals", "/approvals/history", "/notifications", "/sandboxes",
		"/functions", "/vaults", "/usage", "/people", "/tokens", "/audit"}
	for _, v := range vs {
		paths = append(paths, "/vaults/"+v.ID)
	}
	for _, kind := range []string{"mcp", "skill", "sandbox", "fn", "builtin"} {
		paths = append(paths, "/versions/"+draft.ID+"/grants/"+kind+"/new")
	}
	return w, paths
}

// pageCheck is what one page showed in one window and theme.
type pageCheck struct {
	ScrollWidth int `json:"scrollWidth"`
	ClientWidth int `json:"clientWidth"`
	// Wider lists the elements that stick out of the window, for the failure message.
	Wider []string `json:"wider"`
}

const measureWidth = `(() => {
  const root = document.documentElement, w = root.clientWidth;
  const wider = [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > w + 1)
    .filter(e => !e.closest(".table-scroll")).slice(0, 5)
    .map(e => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ").join(".") : "") + " " + Math.round(e.getBoundingClientRect().right));
  return {scrollWidth: root.scrollWidth, clientWidth: w, wider};
})()`

// axeViolation is one rule axe-core found broken, with where.
type axeViolation struct {
	ID    string `json:"id"`
	Help  string `json:"help"`
	Nodes []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// axeSkipped are the rules left unchecked, each with why.
var axeSkipped = []string{}

func TestBrowserLayoutHoldsAndPagesAreAccessible(t *testing.T) {
	axeJS, err := os.ReadFile("testdata/axe/node_modules/axe-core/axe.min.js")
	if err != nil {
		t.Fatal("axe-core is not installed: npm ci --prefix web/testdata/axe (make deps does it)")
	}
	w, paths := consoleWorld(t)
	for _, width := range []int64{1400, 390} {
		for _, scheme := range []string{"light", "dark"} {
			t.Run(fmt.Sprintf("%d px %s", width, scheme), func(t *testing.T) {
				checkPages(t, w, paths, width, scheme, string(axeJS))
			})
		}
	}
}

// checkPages opens every page in one window size and theme, in a browser of
// its own (each has its own deadline), and wants each to fit the window,
// pass axe-core and log no console error.
func checkPages(t *testing.T, w *world, paths []string, width int64, scheme, axeJS string) {
	ctx := browserCtx(t)
	var mu sync.Mutex
	var errs []string
	current := "sign-in"
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, current+": "+m.String())
				mu.Unlock()
			}
		}
	}()
	steps(t, ctx, "emulate the window", chromedp.EmulateViewport(width, 900))
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatalf("emulate %s: %v", scheme, err)
	}
	checkPage(t, ctx, w.srv.URL+"/login", fmt.Sprintf("/login at %d px, %s", width, scheme), axeJS)
	steps(t, ctx, "sign in", ownerSignIn(w.srv.URL)...)
	for _, p := range paths {
		where := fmt.Sprintf("%s at %d px, %s", p, width, scheme)
		mu.Lock()
		current = where
		mu.Unlock()
		checkPage(t, ctx, w.srv.URL+p, where, axeJS)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Errorf("console error on %s", e)
	}
}

// checkPage opens one page and wants it to fit the window and pass axe-core.
func checkPage(t *testing.T, ctx context.Context, url, where, axeJS string) {
	t.Helper()
	steps(t, ctx, "open "+where, chromedp.Navigate(url), poll(`document.readyState === "complete" && !!window.htmx`))
	screenshot(ctx, t, "layout "+strings.NewReplacer("/", "_", "?", "_", " ", "-", ",", "").Replace(where))
	m, err := chromedp.Run(ctx, chromedp.Evaluate[pageCheck](measureWidth))
	if err != nil {
		t.Fatalf("measure %s: %v", where, err)
	}
	if m.ScrollWidth != m.ClientWidth {
		t.Errorf("%s is %d px wide in a %d px window; sticking out: %v", where, m.ScrollWidth, m.ClientWidth, m.Wider)
	}
	for _, v := range runAxe(t, ctx, axeJS, where) {
		if slices.Contains(axeSkipped, v.ID) {
			continue
		}
		b, _ := json.Marshal(v.Nodes)
		t.Errorf("%s: axe %s (%s): %.600s", where, v.ID, v.Help, b)
	}
}

// ownerSignIn signs the owner in through the login form.
func ownerSignIn(base string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(base + "/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
	}
}

// runAxe injects axe-core into the page (DevTools evaluation is not bound by
// the page's Content-Security-Policy) and returns what it finds.
func runAxe(t *testing.T, ctx context.Context, axeJS, where string) []axeViolation {
	t.Helper()
	js := `(() => { if (!window.axe) { ` + axeJS + `
  } return window.axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations); })()`
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe on %s: %v", where, err)
	}
	return v
}

func TestBrowserMenuSkipLinkFaviconAndSchemasOnDemand(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	// The page as sent carries no input schema: "Message to echo" is in the
	// echo tool's schema only.
	_, page := w.browserOf().get("/sessions/" + s.ID)
	if !strings.Contains(page, `data-testid="offered-mcp__everything__echo"`) || strings.Contains(page, "Message to echo") {
		t.Fatalf("the session page should offer echo without its schema; schema sent: %v", strings.Contains(page, "Message to echo"))
	}
	ctx := browserCtx(t)
	steps(t, ctx, "sign in on a phone-sized window",
		append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(390, 800)}, ownerSignIn(w.srv.URL)...)...)
	steps(t, ctx, "see the menu button", chromedp.WaitVisible(css(`[data-testid=nav-toggle]`)))
	if v := attr(t, ctx, `[data-testid=nav-toggle]`, "aria-expanded"); v != "false" {
		t.Fatalf("the menu button starts with aria-expanded=%q", v)
	}
	if shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#main-nav").offsetParent !== null`)); shown {
		t.Fatal("the navigation shows on a 390 px window before the menu is opened")
	}
	steps(t, ctx, "open the menu and follow a link",
		chromedp.Click(css(`[data-testid=nav-toggle]`)),
		chromedp.WaitVisible(css(`[data-testid=nav-sessions]`)),
	)
	if v := attr(t, ctx, `[data-testid=nav-toggle]`, "aria-expanded"); v != "true" {
		t.Fatalf("the open menu's button says aria-expanded=%q", v)
	}
	steps(t, ctx, "Escape closes it",
		chromedp.KeyEvent("\x1b"),
		chromedp.WaitNotVisible(css(`[data-testid=nav-sessions]`)),
	)

	// The first Tab reaches the skip link; following it puts the focus on the content.
	steps(t, ctx, "skip to content", chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(css(`[data-testid=session-tools]`)),
		chromedp.KeyEvent("\t"),
	)
	if f, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.dataset.testid || ""`)); f != "skip-link" {
		t.Fatalf("the first Tab lands on %q, not the skip link", f)
	}
	steps(t, ctx, "follow the skip link", chromedp.KeyEvent("\r"),
		poll(`document.activeElement.id === "main"`))

	// The favicon is linked with a checksum and served as SVG.
	icon := attr(t, ctx, `link[rel=icon]`, "href")
	if !strings.HasPrefix(icon, "/static/favicon.svg?v=") {
		t.Fatalf("the favicon link is %q", icon)
	}
	if ct, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("`+icon+`").then(r => r.ok ? r.headers.get("content-type") : "status " + r.status)`, chromedp.EvalAwaitPromise)); err != nil || ct != "image/svg+xml" {
		t.Fatalf("the favicon is served as %q (%v)", ct, err)
	}

	// Opening a tool fetches its schema.
	steps(t, ctx, "open echo in What the model sees",
		chromedp.Click(css(`[data-testid="offered-mcp__everything__echo"] summary`)),
		poll(`(document.querySelector('[data-testid="schema-mcp__everything__echo"] [data-testid=tool-schema]') || {textContent: ""}).textContent.includes("Message to echo")`),
	)
	// Picking a tool in "Try a tool" fetches its schema then.
	steps(t, ctx, "pick session rename in Try a tool",
		chromedp.SetValue(css(`[data-testid=try-tool-name]`), "builtin__session__rename"),
		void(chromedp.Evaluate[bool](`document.querySelector("[data-testid=try-tool-name]").dispatchEvent(new Event("change", {bubbles: true}))`)),
		poll(`(document.querySelector('[data-schema-for="builtin__session__rename"] [data-testid=tool-schema]') || {textContent: ""}).textContent.includes('"title"')`),
	)
}
