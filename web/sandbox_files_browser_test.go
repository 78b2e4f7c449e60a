package web_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox/local"
)

// The Sandboxes tab browses /workspace, downloads a file and uploads one.
func TestBrowserSandboxesTabBrowsesDownloadsAndUploadsFiles(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "mkdir -p project && echo 'print(42)' > project/main.py")
	upload := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(upload, []byte("from the browser\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in", ownerSignIn(w.srv.URL)...)
	run("open the sandbox's files",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=sandbox-files-open]`)),
		chromedp.Click(css(`[data-testid=sandbox-files-open]`)),
		chromedp.WaitVisible(css(`[data-testid=sandbox-files]`)),
		chromedp.Click(css(`[data-testid=sandbox-folder-open]`)),
		chromedp.WaitVisible(css(`[data-testid=sandbox-file-download]`)),
	)
	if row := text(t, ctx, `[data-testid=sandbox-file-row]`); !strings.Contains(row, "main.py") || !strings.Contains(row, "10 B") {
		t.Fatalf("the project folder lists %q", row)
	}
	if src := text(t, ctx, `[data-testid=sandbox-files-source]`); !strings.Contains(src, "running machine") {
		t.Fatalf("source reads %q", src)
	}
	screenshot(ctx, t, "sandbox-files")
	href := attr(t, ctx, `[data-testid=sandbox-file-download]`, "href")
	b64, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(fetchBase64, href), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("download %s: %v", href, err)
	}
	if got, _ := base64.StdEncoding.DecodeString(b64); string(got) != "print(42)\n" {
		t.Fatalf("downloaded %q", got)
	}
	run("upload a file into the folder shown",
		chromedp.SetUploadFiles(css(`[data-testid=sandbox-file-input]`), []string{upload}),
		chromedp.Click(css(`[data-testid=sandbox-file-upload]`)),
		chromedp.WaitVisible(css(`[data-testid=flash]`)),
		chromedp.WaitVisible(css(`[data-testid=sandbox-files-table] [data-path="project/notes.txt"]`)),
	)
	if flash := text(t, ctx, `[data-testid=flash]`); !strings.Contains(flash, "/workspace/project/notes.txt") {
		t.Fatalf("flash reads %q", flash)
	}
	if out := w.exec(s, "cat project/notes.txt"); out.Stdout != "from the browser\n" {
		t.Fatalf("the sandbox reads %+v", out)
	}
}
