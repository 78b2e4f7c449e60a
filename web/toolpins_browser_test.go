package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The version page shows how the server's tools drifted from the pins, as a
// diff; "New draft with these tools" makes a draft whose publish pins the
// new definitions, and a session of it calls the renamed parameter. The
// draft's editor lists the fetched tools and refuses a rule with a typo.
func TestBrowserPinnedToolsDrift(t *testing.T) {
	w, ps := pinWorld(t, "")
	// A session that listed the tools before the server changed.
	before := w.session(w.vault)
	if _, ok := listed(t, w.mcpSession(before))["mcp__srv__echo"]; !ok {
		t.Fatal("echo is not offered")
	}
	ps.renameParameter()
	ps.addTool()
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	signIn(t, ctx, w, "owner@example.com")
	run("open the published version: nothing compared differs yet",
		chromedp.Navigate(w.srv.URL+"/versions/"+w.version),
		chromedp.WaitVisible(css(`[data-testid=no-drift-srv]`)),
	)
	run("fetch the server's tools now with the vault's credential",
		chromedp.SetValue(css(`[data-testid=vault-srv]`), w.vault),
		void(chromedp.Evaluate[bool](`window.beforeSubmit = true`)),
		chromedp.Click(css(`[data-testid=fetch-now-srv]`)),
	)
	waitNewPage(t, ctx, `!!document.querySelector("[data-testid=drift-srv]")`)
	screenshot(ctx, t, "pinned-tools-drift")
	echo := text(t, ctx, `[data-testid=drift-srv-echo]`)
	if !strings.Contains(echo, "tool changed") || !strings.Contains(echo, "input_schema") ||
		!strings.Contains(echo, `property "message" removed`) || !strings.Contains(echo, `property "text" added`) {
		t.Fatalf("echo's row of the diff: %q", echo)
	}
	if fresh := text(t, ctx, `[data-testid=drift-srv-fresh]`); !strings.Contains(fresh, "tool added") {
		t.Fatalf("fresh's row of the diff: %q", fresh)
	}
	if sees := text(t, ctx, `[data-testid="tool-mcp__srv__echo"]`); !strings.Contains(sees, "calls are refused") {
		t.Fatalf("What the model sees for the changed echo: %q", sees)
	}
	// What Fetch now saw is what that session goes by from its next call.
	var prob struct{ Code, Detail string }
	if st := w.api(before.Token, "POST", "/sessions/"+before.ID+"/tool_calls", map[string]any{"tool": "mcp__srv__echo", "input": map[string]any{"message": "hi"}}, &prob); st != 409 || prob.Code != "tool_changed" {
		t.Fatalf("echo after Fetch now: %d %+v", st, prob)
	}
	run("New draft with these tools",
		void(chromedp.Evaluate[bool](`window.beforeSubmit = true`)),
		chromedp.Click(css(`[data-testid=new-draft-with-tools]`)),
	)
	waitNewPage(t, ctx, `!!document.querySelector("[data-testid=publish]")`)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	draft := loc[strings.LastIndex(loc, "/")+1:]
	if i := strings.IndexAny(draft, "#?"); i >= 0 {
		draft = draft[:i]
	}
	if pins := text(t, ctx, `[data-testid=pins-srv]`); !strings.Contains(pins, "3 tools pinned") {
		t.Fatalf("the draft's tools: %q", pins)
	}
	run("the draft's editor fetches the tools again with the vault's credential",
		chromedp.Navigate(w.srv.URL+"/versions/"+draft+"/grants/mcp/srv/edit"),
		chromedp.WaitVisible(css(`[data-testid=fetched-tools]`)),
		chromedp.SetValue(css(`[data-testid=fetch-vault]`), w.vault),
		void(chromedp.Evaluate[bool](`window.beforeSubmit = true`)),
		chromedp.Click(css(`[data-testid=fetch-tools-button]`)),
	)
	waitNewPage(t, ctx, `!!document.querySelector("[data-testid=fetched-tools]")`)
	if fetched := text(t, ctx, `[data-testid=fetched-tools]`); !strings.Contains(fetched, "3 tools fetched") || !strings.Contains(fetched, "fresh") {
		t.Fatalf("Fetch tools in the editor: %q", fetched)
	}
	run("a rule with a typo",
		chromedp.SetValue(css(`[data-testid=rule-tool-1]`), "get_env"),
		chromedp.SetValue(css(`[data-testid=rule-policy-1]`), "deny"),
		void(chromedp.Evaluate[bool](`window.beforeSubmit = true`)),
		chromedp.Click(css(`[data-testid=grant-submit]`)),
	)
	waitNewPage(t, ctx, `!!document.querySelector("#tool_rules-error")`)
	if msg := text(t, ctx, `#tool_rules-error`); !strings.Contains(msg, `did you mean "get-env"?`) {
		t.Fatalf("the editor's message for get_env: %q", msg)
	}
	if fetched := text(t, ctx, `[data-testid=fetched-tools]`); !strings.Contains(fetched, "echo, get-env, fresh") && !strings.Contains(fetched, "3 tools fetched") {
		t.Fatalf("fetched tools: %q", fetched)
	}
	screenshot(ctx, t, "pinned-tools-typo")
	run("publish the draft",
		chromedp.Navigate(w.srv.URL+"/versions/"+draft),
		chromedp.WaitVisible(css(`[data-testid=publish]`)),
		chromedp.Click(css(`[data-testid=publish]`)),
		chromedp.WaitVisible(css(`[data-testid=confirm-ok]`)),
		chromedp.Click(css(`[data-testid=confirm-ok]`)),
		chromedp.WaitVisible(css(`[data-testid=read-only]`)),
		chromedp.WaitVisible(css(`[data-testid=no-drift-srv]`)),
	)
	// Its sessions offer and run the new definitions.
	w.version = draft
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	if schema := listed(t, cs)["mcp__srv__echo"]; !strings.Contains(schema, `"text"`) {
		t.Fatalf("the new version offers echo as %s", schema)
	}
	var c call
	if w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__srv__echo", "input": map[string]any{"text": "hi"}}, &c); c.Status != "succeeded" || !strings.Contains(string(c.Output), "Echo: hi") {
		t.Fatalf("echo on the new version: %+v", c)
	}
	if w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__srv__fresh", "input": map[string]any{}}, &c); c.Status != "succeeded" {
		t.Fatalf("fresh, pinned on the new version: %+v", c)
	}
}
