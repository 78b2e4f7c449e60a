package web_test

import (
	"html"
	"os"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox/local"
	"github.com/subako/subako/runtime/sandbox/release"
)

// TestReleaseImageShownAndUsed: with release 2026 an image (the
// machine-wide cache, built at most once per machine), the grant form's
// release picker and the session's Sandboxes tab show its manifest (tool
// versions, uv, digest), and an exec runs on it: the manifest's Python, as
// root inside, and the skill's script still runs.
func TestReleaseImageShownAndUsed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("release images need a root server (mmdebstrap, the overlay mount)")
	}
	images := &release.Cache{Dir: release.SharedCacheDir(), UID: 65534, GID: 65534}
	if _, err := images.Root(t.Context(), "2026", os.Stderr); err != nil {
		t.Fatal(err)
	}
	man, err := images.Manifest("2026")
	if err != nil || man == nil {
		t.Fatalf("manifest: %v", err)
	}
	w := newSandboxWorld(t, sandboxConfig, local.Config{Images: images})
	w.rt.SetReleaseInfo(images.Info)
	summary := man.Summary()
	if !strings.Contains(summary, "python3 "+man.Version("python3")) || !strings.Contains(summary, release.ShortDigest(man.Digest)) {
		t.Fatalf("summary %q lacks python3's version or the digest", summary)
	}

	owner := w.browserOf()
	var draft struct{ ID string }
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	if _, page := owner.get("/versions/" + draft.ID + "/grants/sandbox/new"); !strings.Contains(html.UnescapeString(page), "Platform 2026: "+summary) {
		t.Errorf("the grant form's release picker does not show the manifest %q:\n%.3000s", summary, page)
	}

	s := w.session()
	out := w.exec(s, "python3 --version; id -u; /skills/helper/bin/hello.sh")
	python, _, _ := strings.Cut(man.Version("python3"), "-") // 3.11.2-1+b1
	if out.ExitCode != 0 || out.Stdout != "Python "+python+"\n0\nhello from the skill\n" {
		t.Fatalf("exec on the image: %+v", out)
	}
	if _, page := owner.get("/sessions/" + s.ID + "/sandboxes"); !strings.Contains(html.UnescapeString(page), summary) {
		t.Errorf("the Sandboxes tab does not show the release's manifest %q", summary)
	}
}
