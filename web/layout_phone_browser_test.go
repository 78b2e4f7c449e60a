package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// On a phone the sidebar becomes a bar above the page. A page shorter than
// the window (a 404, an empty list) must not stretch that bar to fill the
// space the content leaves: it stays one line with the menu button.
func TestBrowserPhoneBarStaysOneLineOnAShortPage(t *testing.T) {
	e := newEnv(t)
	e.owner()
	ctx := browserCtx(t)
	steps(t, ctx, "sign in on a phone-sized window",
		append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(390, 1000)}, ownerSignIn(e.srv.URL)...)...)
	for _, path := range []string{"/nothing-here", "/tokens"} {
		steps(t, ctx, "open "+path, chromedp.Navigate(e.srv.URL+path), chromedp.WaitVisible(css(`[data-testid=nav-toggle]`)))
		h, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector(".sidebar").getBoundingClientRect().height`))
		if err != nil {
			t.Fatal(err)
		}
		if h > 80 {
			t.Errorf("on %s the bar above the page is %.0f px high at 390 px, want one line (under 80 px)", path, h)
		}
	}
}
