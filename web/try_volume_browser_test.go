package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime"
	htmlrender "github.com/subako/subako/runtime/fn/packages/html-render"
)

// The console's side of issue 15: the Functions page names each package's
// engine and shows an example input; the session page's Try a tool inserts
// a volume file's path into the input, and what the call wrote is listed
// in the Files tab (live there: TestBrowserFilesTab).
func TestBrowserTryAToolWithVolumeFiles(t *testing.T) {
	w := newVolumeWorld(t)
	if _, _, err := w.rt.EnsureFunction(context.Background(), runtime.FunctionInstallInput{Manifest: htmlrender.Manifest(), Wasm: htmlrender.Bundle()}); err != nil {
		t.Fatalf("EnsureFunction html-render: %v", err)
	}
	if st, body := w.put(w.s.Token, "in/a.txt", "hello from the app"); st != 200 {
		t.Fatalf("put: %d %s", st, body)
	}
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in and open the Functions page",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(w.srv.URL+"/functions"),
		chromedp.WaitVisible(css(`[data-testid=functions]`)),
	)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("[data-testid=function-row]")].map(r =>
		[r.querySelector("a").textContent.trim(), r.querySelector("[data-testid=function-engine]").textContent.trim()]))`))
	if err != nil || rows["html-render"] != "native" || rows["volumefiles"] != "WebAssembly" {
		t.Fatalf("engines on the Functions page: %v (%v)", rows, err)
	}
	run("open html-render: its engine and example",
		chromedp.Click(css(`a[href="/functions/html-render/1.0.0"]`)),
		chromedp.WaitVisible(css(`[data-testid=function-example]`)),
	)
	if e := text(t, ctx, `[data-testid=function-props]`); !strings.Contains(e, "native") {
		t.Fatalf("the package's properties read %q", e)
	}
	if ex := text(t, ctx, `[data-testid=function-example]`); !strings.Contains(ex, `"screenshot": "render/hello.png"`) {
		t.Fatalf("the example reads %q", ex)
	}
	screenshot(ctx, t, "function-html-render")

	run("open the session: the picker lists the volume's file",
		chromedp.Navigate(w.srv.URL+"/sessions/"+w.s.ID),
		chromedp.WaitVisible(css(`[data-testid=try-volume-path]`)),
		poll(`document.querySelector("[data-testid=session-live]").getAttribute("data-live") === "open"`),
		chromedp.SetValue(css(`[data-testid=try-tool-name]`), "fn__writer__files"),
		// Picking the tool loads its schema above the input, which moves the
		// Insert button down: a click before it lands would miss the button.
		chromedp.WaitVisible(css(`[data-testid="schema-fn__writer__files"] [data-testid=tool-schema]`)),
		void(chromedp.Evaluate[bool](`(() => { document.querySelector("#try-input").value = '{"ops": [{"op": "read", "path": }, {"op": "mkdir", "path": "/volume/out"}, {"op": "write", "path": "/volume/out/from-try.txt", "text": "copied"}]}'; return true })()`)),
		// The cursor after "path": , where the path goes.
		void(chromedp.Evaluate[bool](`(() => { const i = document.querySelector("#try-input"); i.focus(); i.selectionStart = i.selectionEnd = i.value.indexOf('"path": ') + 8; return true })()`)),
		void(chromedp.Evaluate[bool](`(() => { document.querySelector("#try-volume-path").value = "/volume/in/a.txt"; return true })()`)),
		chromedp.Click(css(`[data-testid=try-insert-path]`)),
	)
	var input string
	if input, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#try-input").value`)); err != nil ||
		input != `{"ops": [{"op": "read", "path": "/volume/in/a.txt"}, {"op": "mkdir", "path": "/volume/out"}, {"op": "write", "path": "/volume/out/from-try.txt", "text": "copied"}]}` {
		t.Fatalf("the input after Insert: %q (%v)", input, err)
	}
	if focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "try-input" {
		t.Fatalf("focus after Insert is on %q, want the input", focused)
	}
	screenshot(ctx, t, "try-volume-picker")
	run("run it: the output has the file's text",
		chromedp.Click(css(`[data-testid=try-submit]`)),
		watchDOM(`document.querySelector("[data-testid=try-result]")?.getAttribute("data-status") === "succeeded"`, 30*time.Second),
	)
	if out := text(t, ctx, `[data-testid=try-output]`); !strings.Contains(out, "hello from the app") {
		t.Fatalf("the result shows %q", out)
	}
	run("the Files tab lists what it wrote, as the call's",
		chromedp.Click(css(`[data-testid=tab-files]`)),
		chromedp.WaitVisible(css(`tr[data-path="out/from-try.txt"]`)),
	)
	if row := text(t, ctx, `tr[data-path="out/from-try.txt"]`); !strings.Contains(row, "call call_") {
		t.Fatalf("the file's row reads %q", row)
	}
}
