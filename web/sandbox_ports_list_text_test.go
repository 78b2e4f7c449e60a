package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox/local"
)

// The Sandboxes tab lists each listening port on a line of its own. The
// ports' spans had no space between them, so two ports read
// "8000 · Preview8001 · Preview".
func TestBrowserSandboxPortsReadOneALine(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	owner := w.browser()
	if resp, _ := owner.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	s := w.session()
	w.serveInside(owner, s, "python3 -m http.server 8001 >/dev/null 2>&1 & python3 -m http.server 8000")
	for i := 0; ; i++ {
		if _, page := owner.get("/sessions/" + s.ID + "/sandboxes"); strings.Contains(page, `data-port="8001"`) {
			break
		}
		if i == 100 {
			t.Fatal("port 8001 was never listed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx := browserCtx(t)
	signIn(t, ctx, w.world, "owner@example.com")
	steps(t, ctx, "open the Sandboxes tab",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=sandbox-ports]`)),
	)
	shown := text(t, ctx, `[data-testid=sandbox-ports]`)
	if !strings.Contains(shown, "8000 · Preview\n8001 · Preview") || strings.Contains(shown, "Preview8") {
		t.Errorf("the ports read %q", shown)
	}
}
