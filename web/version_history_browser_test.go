package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// At 1400 px a version's History shows its times whole, in two lines if it
// must, rather than in a table the reader has to scroll sideways.
func TestBrowserVersionHistoryFitsItsCard(t *testing.T) {
	w := newWorld(t, everythingConfig)
	ctx := browserCtx(t)
	steps(t, ctx, "emulate the window", chromedp.EmulateViewport(1400, 900))
	steps(t, ctx, "sign in", ownerSignIn(w.srv.URL)...)
	steps(t, ctx, "open the version", chromedp.Navigate(w.srv.URL+"/versions/"+w.version),
		poll(`document.readyState === "complete" && !!document.querySelector('[data-testid="versions"]')`))
	over, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`(() => { const r = document.querySelector('[data-testid="versions"]').closest(".table-scroll"); return r.scrollWidth - r.clientWidth })()`))
	if err != nil {
		t.Fatal(err)
	}
	if over > 0 {
		t.Fatalf("the History table is %d px wider than its card at 1400 px", over)
	}
}
