package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A signed-in console page imports $.js by its cookie, with no url (the
// module knows where it came from), and drives the API with a token: the
// owner's call works, the viewer's Agent.create throws SubakoError naming
// the missing permission.
func TestBrowserImportsClientScript(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	ownerTok := owner.token()
	viewerTok := e.person(owner, "viewer@example.com", "viewer").token()
	ctx := browserCtx(t)
	steps(t, ctx, "sign in",
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
	)
	js := `(async () => {
  const { subako, SubakoError } = await import("/api/v1/$.js");
  const $ = subako({ token: "` + ownerTok + `" });
  const made = await $.Agent.create({ name: "from-browser" });
  const got = await $.Agent.get({ agent: made.id });
  let refused = "not refused";
  try {
    await subako({ token: "` + viewerTok + `" }).Agent.create({ name: "refused" });
  } catch (e) {
    refused = (e instanceof SubakoError) + " " + e.status + " " + e.missing_permission;
  }
  return got.name + " | " + refused;
})()`
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page's script: %v", err)
	}
	if want := "from-browser | true 403 Agent.create"; !strings.Contains(got, want) {
		t.Errorf("the page's script answered %q, want %q", got, want)
	}
}
