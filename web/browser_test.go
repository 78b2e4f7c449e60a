package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// browserCtx starts headless Chromium (Debian's package) for one test. The
// flags keep it from reaching for the network this machine does not have.
func browserCtx(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: apt-get install chromium chromium-driver (make test does it)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first Run starts the browser and must not carry a timeout; the
	// test's own deadline bounds the rest.
	if _, err := chromedp.Run(ctx, chromedp.Sleep(0)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// A JavaScript dialog, should a page open one, is accepted as a person clicking OK
	// would (data-confirm asks in the page's own <dialog>: see confirm-ok).
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	// Generous: under CI's load (both suites' packages side by side) a
	// browser test that takes 5 s alone has been seen to pass 60.
	ctx, cancel3 := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

// screenshot keeps a picture of the page for a person to look at when asked.
func screenshot(ctx context.Context, t *testing.T, name string) {
	dir := os.Getenv("SUBAKO_SCREENSHOTS")
	if dir == "" {
		return
	}
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(dir+"/"+name+".png", png, 0o644)
	}
}

// text reads an element's visible text.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	// One script finds the node and reads it, so an htmx or SSE swap that
	// replaces the node between the two cannot fail the read.
	js := fmt.Sprintf(`(e => e ? {t: e.innerText} : null)(document.querySelector(%q))`, sel)
	v, err := chromedp.Run(ctx, pollAgain[struct {
		T string `json:"t"`
	}](js, 15*time.Second))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return v.T
}

// attr reads one attribute of the first node matching sel, found and read
// in one script for the same reason as text.
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	js := fmt.Sprintf(`(e => e ? {v: e.getAttribute(%q) || ""} : null)(document.querySelector(%q))`, name, sel)
	v, err := chromedp.Run(ctx, pollAgain[struct {
		V string `json:"v"`
	}](js, 15*time.Second))
	if err != nil {
		t.Fatalf("read %s of %s: %v", name, sel, err)
	}
	return v.V
}

func steps(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, whereThingsStand(ctx))
	}
}

// whereThingsStand says, for a step that failed, what the page in front shows
// and which console requests the server is still in, so that a wait which ran
// out names a click that did nothing (the old page still up, its dialog open),
// a page that never came, a handler that never returned, or a page that came
// but that chromedp's copy of the DOM (which its queries wait on) missed,
// rather than only "context deadline exceeded". The page is read with
// Runtime.evaluate, outside that copy, on a context of its own, since the
// test's may have just run out.
func whereThingsStand(ctx context.Context) string {
	cx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	state, err := chromedp.Run(cx, chromedp.Evaluate[string](pageStateJS))
	if err != nil {
		state = "not readable: " + err.Error()
	}
	return "page: " + state + "\nserver: " + busyHandlers()
}

// pageStateJS sums up the page: where it is, whether it has loaded, whether
// it is still the page a test marked (window.notReloaded, beforeSubmit), its
// dialogs, flashes and focus, and how its document was fetched.
const pageStateJS = `(() => {
	const id = e => e ? (e.getAttribute("data-testid") || e.id || e.tagName.toLowerCase()) : null;
	const nav = performance.getEntriesByType("navigation")[0];
	return JSON.stringify({
		url: location.href, ready: document.readyState, title: document.title,
		marked: {notReloaded: window.notReloaded === true, beforeSubmit: window.beforeSubmit === true},
		dialogs: [...document.querySelectorAll("dialog")].map(d => ({id: id(d), open: d.open, returnValue: d.returnValue})),
		flashes: [...document.querySelectorAll("[data-testid=flash]")].map(f => f.innerText),
		focus: id(document.activeElement),
		document: nav && {type: nav.type, redirects: nav.redirectCount, status: nav.responseStatus,
			fetchedMs: Math.round(nav.responseEnd), loadedMs: Math.round(nav.loadEventEnd)},
		ageMs: Math.round(performance.now()),
	});
})()`

// busyHandlers lists the goroutines serving an HTTP request inside Subako's
// code, the event streams waiting for their next event left out: after a
// wait ran out, one of these is a request that has not been answered.
func busyHandlers() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	var busy []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "net/http.(*conn).serve") && strings.Contains(g, "github.com/subako/subako/") &&
			!strings.Contains(g, "(*sseStream).await") {
			busy = append(busy, g)
		}
	}
	if len(busy) == 0 {
		return "no request in progress but event streams"
	}
	n := len(busy)
	if n > 10 {
		busy = append(busy[:10], "…")
	}
	return fmt.Sprintf("%d request(s) in progress:\n%s", n, strings.Join(busy, "\n\n"))
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

func TestBrowserSetupLoginLogout(t *testing.T) {
	e := newEnv(t)
	token, _, err := e.rt.EnsureSetupLink(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx := browserCtx(t)
	steps(t, ctx, "setup in the browser",
		chromedp.Navigate(e.srv.URL+"/setup/"+token),
		chromedp.WaitVisible(css(`[data-testid=setup-email]`)),
		chromedp.SendKeys(css(`[data-testid=setup-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=setup-name]`), "Olga"),
		chromedp.SendKeys(css(`[data-testid=setup-password]`), password),
		chromedp.Click(css(`[data-testid=setup-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
	)
	screenshot(ctx, t, "dashboard")
	if who, heading := text(t, ctx, `[data-testid=whoami]`), text(t, ctx, `h1`); who != "owner@example.com" || !strings.Contains(heading, "Olga") {
		t.Fatalf("dashboard shows %q / %q", who, heading)
	}
	steps(t, ctx, "sign out",
		chromedp.Click(css(`[data-testid=logout]`)),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
	)
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.HasSuffix(loc, "/login") {
		t.Fatalf("after sign-out the browser is at %q: %v", loc, err)
	}
	screenshot(ctx, t, "login")
	steps(t, ctx, "sign in",
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(e.srv.URL+"/setup/"+token),
		chromedp.WaitVisible(css(`h1`)),
	)
	if heading := text(t, ctx, "h1"); !strings.Contains(heading, "not valid") {
		t.Fatalf("the used setup link shows %q", heading)
	}
}

// pollAgain is chromedp.Poll for up to d in whatever document is in front.
// chromedp's poll does not survive a navigation: one started in a document
// that is then replaced fails with "Cannot find context with specified id"
// (which failed CI runs on pages that had loaded). This one starts again
// in the new document, within the same d.
func pollAgain[T any](cond string, d time.Duration, opts ...chromedp.PollOption) chromedp.Action[T] {
	return func(ctx context.Context, t *chromedp.Target) (T, error) {
		deadline := time.Now().Add(d)
		for {
			v, err := chromedp.Poll[T](cond, append(opts, chromedp.WithPollingTimeout(max(time.Until(deadline), time.Millisecond)))...)(ctx, t)
			if err == nil || !documentReplaced(err) || time.Now().After(deadline) {
				return v, err
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return v, err
			}
		}
	}
}

// poll waits up to 30 s, chromedp.Poll's own default, until cond holds.
func poll(cond string) chromedp.Action[chromedp.Void] {
	return void(pollAgain[bool](cond, 30*time.Second))
}

// documentReplaced says whether err is DevTools' answer to a script run in
// a document that has since been replaced.
func documentReplaced(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed")
}

// sleepCtx sleeps for d, or less if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// void runs an action for its effect, dropping its value, so it fits in steps.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// waitNewPage waits until the page marked with window.beforeSubmit has been
// replaced by a loaded page where cond holds, for up to 30 s. It polls
// whatever document is in front (pollAgain), not chromedp's copy of the DOM
// (which its queries wait on, and which can miss a page that came after a
// navigation). If the page never comes it says where things stand.
func waitNewPage(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	js := `window.beforeSubmit === undefined && document.readyState === "complete" && (` + cond + `)`
	if _, err := chromedp.Run(ctx, pollAgain[bool](js, 30*time.Second)); err != nil {
		t.Fatalf("the next page never came: %s: %v\n%s", cond, err, whereThingsStand(ctx))
	}
}
