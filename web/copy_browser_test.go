package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// The Copy button next to a token shown once puts the token on the
// clipboard and says "Copied", to the eye and to a screen reader.
func TestBrowserCopyButtonCopiesTheToken(t *testing.T) {
	e := newEnv(t)
	e.owner()
	ctx := browserCtx(t)
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.Call(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted, Origin: e.srv.URL}); err != nil {
			t.Fatalf("grant %s: %v", name, err)
		}
	}
	steps(t, ctx, "create a token", append(ownerSignIn(e.srv.URL),
		chromedp.Navigate(e.srv.URL+"/tokens"),
		chromedp.WaitVisible(css(`#tname`)),
		chromedp.SendKeys(css(`#tname`), "ci"),
		chromedp.Click(css(`form[action="/tokens"] button[type=submit]`)),
		chromedp.WaitVisible(css(`[data-testid=token-created]`)),
		chromedp.WaitVisible(css(`[data-testid=copy-token-created]`)),
	)...)
	token := strings.TrimSpace(text(t, ctx, `[data-testid=token-created]`))
	if label := attr(t, ctx, `[data-testid=copy-token-created]`, "aria-label"); label != "Copy the API token" {
		t.Fatalf("the copy button is labelled %q", label)
	}
	steps(t, ctx, "copy", chromedp.Click(css(`[data-testid=copy-token-created]`)))
	js := `document.querySelector("[data-testid=copy-status-token-created]").textContent === "Copied" &&
		document.querySelector("[data-testid=copy-token-created]").textContent === "Copied"`
	if _, err := chromedp.Run(ctx, poll(js)); err != nil {
		t.Fatalf("no Copied feedback: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil || got != token || !strings.HasPrefix(got, "sbk_") {
		t.Fatalf("the clipboard holds %q (%v), want the token %q", got, err, token)
	}
}
