package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox/local"
)

// In Chromium: a server started by a background exec that has already
// answered is listed on the Sandboxes tab and its preview renders.
func TestBrowserBackgroundJobPreview(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "mkdir -p site && echo '<h1 id=made>served by a job</h1>' > site/index.html")
	if c, job := w.jobCall(s, map[string]any{"command": "cd site && exec python3 -m http.server 8000", "background": true}); c.Status != "succeeded" || job.JobStatus != "running" {
		t.Fatalf("the background exec: %+v", c)
	}

	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	signIn(t, ctx, w.world, "owner@example.com")
	run("open the session's Sandboxes tab",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=port-preview]`)),
	)
	href := attr(t, ctx, `[data-testid=port-preview]`, "href")
	if !strings.HasSuffix(href, "/ports/8000/") {
		t.Fatalf("the Preview link is %q", href)
	}
	run("open the preview",
		chromedp.Navigate(w.srv.URL+href),
		chromedp.WaitVisible(css(`#made`)),
	)
	screenshot(ctx, t, "sandbox-background-job-preview")
}
