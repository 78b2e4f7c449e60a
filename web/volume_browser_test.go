package web_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A one-page PDF, small enough to write by hand.
const tinyPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 100]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

func TestBrowserFilesTab(t *testing.T) {
	w := newVolumeWorld(t)
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for x := range 40 {
		img.Set(x, 10, color.RGBA{200, 30, 30, 255})
	}
	var pngBytes bytes.Buffer
	png.Encode(&pngBytes, img)
	if st, _ := w.put(w.s.Token, "chart.png", pngBytes.String()); st != 200 {
		t.Fatal("put chart.png")
	}
	if st, _ := w.put(w.s.Token, "docs/brief.pdf", tinyPDF); st != 200 {
		t.Fatal("put brief.pdf")
	}
	upload := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(upload, []byte("Uploaded from the Files tab.\n"), 0o644)

	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in and open the session's Files tab from the session page",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(w.srv.URL+"/sessions/"+w.s.ID),
		chromedp.WaitVisible(css(`[data-testid=tab-files]`)),
		chromedp.Click(css(`[data-testid=tab-files]`)),
		chromedp.WaitVisible(css(`[data-testid=files-upload]`)),
		chromedp.WaitVisible(css(`tr[data-path="chart.png"]`)),
	)
	run("upload a file into a folder",
		chromedp.SendKeys(css(`[data-testid=files-folder]`), "notes"),
		chromedp.SetUploadFiles(css(`[data-testid=files-file]`), []string{upload}),
		chromedp.Click(css(`[data-testid=files-upload-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=flash]`)),
		chromedp.WaitVisible(css(`tr[data-path="notes/notes.txt"]`)),
	)
	if flash := text(t, ctx, `[data-testid=flash]`); !strings.Contains(flash, "notes/notes.txt") {
		t.Fatalf("the flash reads %q", flash)
	}
	if st, body := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/notes/notes.txt", nil, ""); st != 200 || body != "Uploaded from the Files tab.\n" {
		t.Fatalf("the app reads the uploaded file: %d %q", st, body)
	}
	run("preview the text file",
		chromedp.Click(css(`tr[data-path="notes/notes.txt"] [data-testid=file-preview-link]`)),
		chromedp.WaitVisible(css(`[data-testid=file-preview-text]`)),
	)
	src := attr(t, ctx, `[data-testid=file-preview-text]`, "src")
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q).then(r => r.headers.get("content-type") + "|" + r.headers.get("content-security-policy") + "|" + r.status).then(s => s)`, src), chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(got, "text/plain; charset=utf-8|sandbox;") || !strings.HasSuffix(got, "|200") {
		t.Fatalf("the text preview is served as %q (%v)", got, err)
	}
	screenshot(ctx, t, "files-preview-text")
	run("preview the image",
		chromedp.Click(css(`tr[data-path="chart.png"] [data-testid=file-preview-link]`)),
		chromedp.WaitVisible(css(`[data-testid=file-preview-image]`)),
		poll(`document.querySelector("[data-testid=file-preview-image]").naturalWidth === 40`),
	)
	run("preview the PDF",
		chromedp.Click(css(`tr[data-path="docs/brief.pdf"] [data-testid=file-preview-link]`)),
		chromedp.WaitVisible(css(`[data-testid=file-preview-pdf]`)),
	)
	src = attr(t, ctx, `[data-testid=file-preview-pdf]`, "src")
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q).then(r => r.headers.get("content-type"))`, src), chromedp.EvalAwaitPromise)); err != nil || got != "application/pdf" {
		t.Fatalf("the PDF preview is served as %q (%v)", got, err)
	}
	screenshot(ctx, t, "files-preview-pdf")
	run("a function's write appears without a reload",
		void(chromedp.Evaluate[bool](`window.notReloaded = true`)),
	)
	w.call("fn__writer__files", `[{"op":"mkdir","path":"/volume/out"},{"op":"write","path":"/volume/out/summary.txt","text":"rows: 1"}]`)
	run("see it live",
		chromedp.WaitVisible(css(`tr[data-path="out/summary.txt"]`)),
		poll(`window.notReloaded === true`),
	)
	if row := text(t, ctx, `tr[data-path="out/summary.txt"]`); !strings.Contains(row, "call call_") {
		t.Fatalf("the function's file row reads %q", row)
	}
	run("delete a file after confirming",
		chromedp.Click(css(`tr[data-path="chart.png"] [data-testid=file-delete]`)),
		chromedp.WaitVisible(css(`[data-testid=confirm-ok]`)),
		chromedp.Click(css(`[data-testid=confirm-ok]`)),
		chromedp.WaitVisible(css(`[data-testid=flash]`)),
		poll(`document.querySelector('tr[data-path="chart.png"]') === null`),
	)
	if st, _ := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/chart.png", nil, ""); st != 404 {
		t.Fatalf("chart.png after the console deleted it: %d", st)
	}
	screenshot(ctx, t, "files-after-delete")
	run("the session's call log says what the call wrote",
		chromedp.Navigate(w.srv.URL+"/sessions/"+w.s.ID),
		chromedp.WaitVisible(css(`[data-testid=call-files]`)),
	)
	if files := text(t, ctx, `[data-testid=call-files]`); !strings.Contains(files, "wrote out/summary.txt") {
		t.Fatalf("the call log's volume line reads %q", files)
	}
}
