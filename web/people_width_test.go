package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The People table fits a 1280-pixel window: the last owner's "Remove is
// off — …" hint wraps in its cell. It did not (the actions cell is nowrap),
// so the table scrolled sideways and squeezed the access pickers to "owne".
func TestBrowserPeopleTableFitsTheWindow(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	e.person(owner, "bob@example.com", "member")
	ctx := browserCtx(t)
	steps(t, ctx, "sign in", ownerSignIn(e.srv.URL)...)
	steps(t, ctx, "open People",
		chromedp.Navigate(e.srv.URL+"/people"),
		chromedp.WaitVisible(css(`[data-testid=remove-why-owner\@example\.com]`)),
	)
	over, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
		`(() => { const s = document.querySelector("[data-testid=people]").closest(".table-scroll"); return s.scrollWidth - s.clientWidth })()`))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(ctx, t, "people")
	if over > 0 {
		t.Errorf("the People table is %.0f pixels wider than its card", over)
	}
}
