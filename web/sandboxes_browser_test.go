package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// fetchBase64 downloads url with the page's cookies and returns the body,
// base64-encoded so it crosses the DevTools protocol intact.
const fetchBase64 = `fetch(%q).then(r => { if (!r.ok) throw new Error("status " + r.status); return r.arrayBuffer(); })
  .then(b => { const u = new Uint8Array(b); let s = ""; for (let i = 0; i < u.length; i++) s += String.fromCharCode(u[i]); return btoa(s); })`

// stateIs polls the first sandbox row's state badge.
func stateIs(state string) chromedp.Action[chromedp.Void] {
	return poll(`(document.querySelector("[data-testid=sandbox-state]") || {textContent: ""}).textContent.trim() === "` + state + `"`)
}

func TestBrowserSandboxesTabLiveStateAndArchive(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "mkdir -p project && echo 'print(42)' > project/main.py")
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in and open the session's Sandboxes tab",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=sandbox-row]`)),
		stateIs("running"),
		// A mark that a reload would wipe: the state must change live.
		void(chromedp.Evaluate[bool](`window.notReloaded = true`)),
	)
	if back := attr(t, ctx, `[data-testid=tab-session]`, "href"); back != "/sessions/"+s.ID {
		t.Fatalf("the tab bar links back to %q", back)
	}
	if row := text(t, ctx, `[data-testid=sandbox-row]`); !strings.Contains(row, "workbench") || !strings.Contains(row, "No internet") {
		t.Fatalf("the row reads %q", row)
	}
	screenshot(ctx, t, "sandboxes-running")

	w.advance(sandbox.DefaultIdleTimeout)
	run("see it suspended without a reload",
		stateIs("suspended"),
		chromedp.WaitVisible(css(`[data-testid=archive-download]`)),
		poll(`window.notReloaded === true`),
	)
	screenshot(ctx, t, "sandboxes-suspended")
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=archive-delete]").length`)); err != nil || n != 0 {
		t.Fatalf("a suspended sandbox offers Delete archive (%d, %v)", n, err)
	}
	if files := downloadInBrowser(t, ctx); files["project/main.py"] != "print(42)\n" {
		t.Fatalf("the downloaded archive holds %v", files)
	}

	w.advance(sandbox.DefaultRetireAfter)
	run("retired: delete the archive after confirming",
		stateIs("retired"),
		chromedp.WaitVisible(css(`[data-testid=archive-delete]`)),
		chromedp.Click(css(`[data-testid=archive-delete]`)),
		chromedp.WaitVisible(css(`[data-testid=confirm-ok]`)),
		chromedp.Click(css(`[data-testid=confirm-ok]`)),
		chromedp.WaitVisible(css(`[data-testid=flash]`)),
	)
	if archive := text(t, ctx, `[data-testid=sandbox-archive]`); strings.TrimSpace(archive) != "none" {
		t.Fatalf("after deletion the archive column reads %q", archive)
	}
	screenshot(ctx, t, "sandboxes-retired")
	run("the page across sessions lists it",
		chromedp.Navigate(w.srv.URL+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=sandbox-row]`)),
		stateIs("retired"),
	)
}

// downloadInBrowser follows the Download archive link with the page's
// cookies and unpacks what it got.
func downloadInBrowser(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	href := attr(t, ctx, `[data-testid=archive-download]`, "href")
	b64, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(fetchBase64, href), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("download %s in the browser: %v", href, err)
	}
	gz, _ := base64.StdEncoding.DecodeString(b64)
	return untar(t, gz)
}
