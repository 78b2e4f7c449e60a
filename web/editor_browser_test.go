package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestBrowserVersionEditorSandboxGrant(t *testing.T) {
	e := newEnv(t)
	e.owner()
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in",
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
	)
	run("create an agent and a draft",
		chromedp.Navigate(e.srv.URL+"/agents"),
		chromedp.SendKeys(css(`[data-testid=agent-name]`), "Support"),
		chromedp.Click(css(`[data-testid=agent-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=new-version]`)),
		chromedp.Click(css(`[data-testid=new-version]`)),
		chromedp.WaitVisible(css(`[data-testid=add-sandbox]`)),
		chromedp.Click(css(`[data-testid=add-sandbox]`)),
		chromedp.WaitVisible(css(`[data-testid=grant-name]`)),
	)
	// A bad name: the message appears under the field as the person types.
	run("type a bad name",
		chromedp.SendKeys(css(`[data-testid=grant-name]`), "Work_Bench"),
		poll(`document.querySelector("[data-testid=name-error]").textContent.includes("lowercase")`),
	)
	if msg := text(t, ctx, `[data-testid=name-error]`); !strings.Contains(msg, "may contain only lowercase letters") {
		t.Fatalf("live message for a bad name: %q", msg)
	}
	screenshot(ctx, t, "grant-bad-name")
	// Submitting it anyway keeps the person on the form with the same message.
	// Mark the page, so the wait below can tell the answer's page from this one.
	run("submit the bad name",
		void(chromedp.Evaluate[bool](`window.beforeSubmit = true`)),
		chromedp.Click(css(`[data-testid=grant-submit]`)),
	)
	waitNewPage(t, ctx, `!!document.querySelector("[data-testid=name-error]")`)
	if msg := text(t, ctx, `[data-testid=name-error]`); !strings.Contains(msg, "lowercase") {
		t.Fatalf("after submit the name message is %q", msg)
	}
	run("fix the name, ask first for exec, save",
		chromedp.Clear(css(`[data-testid=grant-name]`)),
		chromedp.SendKeys(css(`[data-testid=grant-name]`), "workbench"),
		poll(`document.querySelector("[data-testid=name-error]").textContent === ""`),
		chromedp.SetValue(css(`[data-testid=rule-tool-0]`), "exec"),
		chromedp.SetValue(css(`[data-testid=rule-policy-0]`), "ask"),
		chromedp.Click(css(`[data-testid=grant-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=model-sees]`)),
	)
	sees := text(t, ctx, `[data-testid="tool-sandbox__workbench__exec"]`)
	if !strings.Contains(sees, "sandbox__workbench__exec") || !strings.Contains(sees, "Ask first") {
		t.Fatalf("What the model sees: %q", sees)
	}
	screenshot(ctx, t, "editor-draft")
	run("publish",
		chromedp.Click(css(`[data-testid=publish]`)),
		chromedp.WaitVisible(css(`[data-testid=confirm-ok]`)),
		chromedp.Click(css(`[data-testid=confirm-ok]`)),
		chromedp.WaitVisible(css(`[data-testid=read-only]`)),
	)
	screenshot(ctx, t, "editor-published")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=add-sandbox], [data-testid=publish], [data-testid=import-submit]").length`))
	if err != nil || n != 0 {
		t.Fatalf("a published version still offers %d editing controls (%v)", n, err)
	}
}
