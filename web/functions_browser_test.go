package web_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestBrowserInstallFunction(t *testing.T) {
	f := newFnEnv(t)
	pkg := func(name string) string { return filepath.Join(f.mods.Dir, "packages", name) }
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in and open Functions",
		chromedp.Navigate(f.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Click(css(`[data-testid=nav-functions]`)),
		chromedp.WaitVisible(css(`[data-testid=function-wasm]`)),
	)
	if empty := text(t, ctx, `[data-testid=empty]`); !strings.Contains(empty, "No function packages are installed") {
		t.Fatalf("Functions before any install: %q", empty)
	}
	// The wrong file first: the manifest as the module.
	run("upload a manifest as the module",
		chromedp.SetUploadFiles(css(`[data-testid=function-wasm]`), []string{pkg("jq.manifest.json")}),
		chromedp.SetUploadFiles(css(`[data-testid=function-manifest]`), []string{pkg("jq.manifest.json")}),
		chromedp.Click(css(`[data-testid=function-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=function-wasm-error]`)),
	)
	if msg := text(t, ctx, `[data-testid=function-wasm-error]`); !strings.Contains(msg, "not a WebAssembly module") {
		t.Fatalf("the module's message: %q", msg)
	}
	screenshot(ctx, t, "functions-bad-module")
	run("install jq",
		chromedp.SetUploadFiles(css(`[data-testid=function-wasm]`), []string{pkg("jq.wasm")}),
		chromedp.SetUploadFiles(css(`[data-testid=function-manifest]`), []string{pkg("jq.manifest.json")}),
		chromedp.Click(css(`[data-testid=function-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=function-schema]`)),
	)
	if schema := text(t, ctx, `[data-testid=function-schema]`); !strings.Contains(schema, `"filter"`) {
		t.Fatalf("jq's page shows the schema %q", schema)
	}
	screenshot(ctx, t, "function-jq")
	run("back to the list",
		chromedp.Click(css(`[data-testid=nav-functions]`)),
		chromedp.WaitVisible(css(`[data-testid=function-row]`)),
	)
	if row := text(t, ctx, `[data-testid=function-row]`); !strings.Contains(row, "jq") || !strings.Contains(row, "query") || !strings.Contains(row, "MiB") {
		t.Fatalf("the list shows %q", row)
	}
	screenshot(ctx, t, "functions")
}
