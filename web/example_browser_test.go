package web_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox/local"
)

// TestBrowserFirstRun: the first-run states fit the window at 1400 and 390
// px, light and dark, and pass axe-core: the sign-in page before setup, the
// empty dashboard offering the example, the example's session after one
// click, the dashboard's figures and a 404. Times read in the viewer's zone.
func TestBrowserFirstRun(t *testing.T) {
	axeJS, err := os.ReadFile("testdata/axe/node_modules/axe-core/axe.min.js")
	if err != nil {
		t.Fatal("axe-core is not installed: npm ci --prefix web/testdata/axe (make deps does it)")
	}
	f := newFnEnv(t)
	// newFnEnv made the owner; a second, empty server shows the sign-in page before setup.
	empty := newEnv(t)
	f.install("jq")
	startSandboxes(t, f.rt, sandboxDirs(t), local.Config{})
	first := true
	for _, width := range []int64{1400, 390} {
		for _, scheme := range []string{"light", "dark"} {
			t.Run(fmt.Sprintf("%d px %s", width, scheme), func(t *testing.T) {
				ctx := browserCtx(t)
				steps(t, ctx, "emulate the window", chromedp.EmulateViewport(width, 900))
				if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
					t.Fatalf("emulate %s: %v", scheme, err)
				}
				if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
					t.Fatalf("emulate the time zone: %v", err)
				}
				where := fmt.Sprintf("at %d px, %s", width, scheme)
				checkPage(t, ctx, empty.srv.URL+"/login", "/login before setup "+where, string(axeJS))
				if hint := text(t, ctx, `[data-testid=setup-hint]`); !strings.Contains(hint, "subako serve") {
					t.Errorf("the setup hint reads %q", hint)
				}
				steps(t, ctx, "sign in", ownerSignIn(f.srv.URL)...)
				if first {
					checkPage(t, ctx, f.srv.URL+"/", "the empty dashboard "+where, string(axeJS))
					first = false
					steps(t, ctx, "load the example", void(chromedp.Evaluate[int](`window.beforeSubmit = 1`)),
						chromedp.Click(css(`[data-testid=example-offer] button`)))
					waitNewPage(t, ctx, `location.pathname.startsWith("/sessions/")`)
					here, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
					if err != nil {
						t.Fatal(err)
					}
					checkPage(t, ctx, here, "the example's session "+where, string(axeJS))
				}
				for _, p := range []string{"/", "/agents/agt_nope", "/audit"} {
					checkPage(t, ctx, f.srv.URL+p, p+" "+where, string(axeJS))
				}
				// /audit lists the example's actions: each time reads in Tokyo, its title in UTC.
				if title := attr(t, ctx, `time[data-local-time][data-localized]`, "title"); !strings.HasSuffix(title, "UTC") {
					t.Errorf("a localized time's title is %q; want the UTC text", title)
				}
				if got := text(t, ctx, `time[data-local-time]`); strings.HasSuffix(got, "UTC") {
					t.Errorf("a time still reads %q in a browser in Tokyo", got)
				}
			})
		}
	}
}
