package web_test

import (
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox/local"
	"github.com/subako/subako/runtime/sandbox/release"
)

// The Sandboxes tab of a sandbox on a release image: the manifest (a long
// line of package versions) wraps, so the row's Files button stays inside
// the 1280-pixel window. It did not wrap (td.small is nowrap), which pushed
// the state, the ports' Preview links and Files out of view.
func TestBrowserReleaseManifestWrapsInTheSandboxesTab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("release images need a root server (mmdebstrap, the overlay mount)")
	}
	images := &release.Cache{Dir: release.SharedCacheDir(), UID: 65534, GID: 65534}
	if _, err := images.Root(t.Context(), "2026", os.Stderr); err != nil {
		t.Fatal(err)
	}
	w := newSandboxWorld(t, sandboxConfig, local.Config{Images: images})
	w.rt.SetReleaseInfo(images.Info)
	s := w.session()
	w.exec(s, "echo hi > note.txt")
	ctx := browserCtx(t)
	steps(t, ctx, "sign in", ownerSignIn(w.srv.URL)...)
	steps(t, ctx, "open the Sandboxes tab",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=sandbox-release-manifest]`)),
	)
	right, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
		`document.querySelector("[data-testid=sandbox-files-open]").getBoundingClientRect().right`))
	if err != nil {
		t.Fatal(err)
	}
	if right <= 0 || right > 1280 {
		screenshot(ctx, t, "sandbox-manifest-overflow")
		t.Errorf("the Files button ends at x=%.0f, outside the 1280-pixel window", right)
	}
}
