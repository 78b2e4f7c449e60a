package web_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

const knownToolsConfig = `{
  "sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
    "network": {"type": "unrestricted"}, "default_policy": "allow"}],
  "functions": [{"name": "gh", "package": "github", "version": "1.0.0",
    "origins": ["https://api.github.com"], "default_policy": "allow", "tool_rules": {"get_repo": "deny"}}],
  "builtins": [{"name": "ask_user"}]
}`

// Tool rules suggest the grant's known tools (a function package's, a
// sandbox's exec), radio groups are fieldsets with legends, the built-in
// picker offers only what is not granted yet, and What the model sees shows
// each tool's description and input schema, collapsed.
func TestGrantFormsOfferKnownToolsAndTheModelSeesSchemas(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	e.installTestFunction()
	_, v := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", knownToolsConfig); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	fn := mustGet(owner, "/versions/"+v.ID+"/grants/fn/gh/edit")
	for _, want := range []string{`<datalist id="rule-tools"><option value="get_repo"></option></datalist>`,
		`value="get_repo" aria-label="Tool of rule 1" aria-describedby="rules-hint" list="rule-tools"`,
		`<legend class="label">Default policy</legend>`, `<legend class="label">Tool rules</legend>`, `data-rule-add hidden`} {
		if !strings.Contains(fn, want) {
			t.Errorf("the function grant form lacks %s", want)
		}
	}
	sb := mustGet(owner, "/versions/"+v.ID+"/grants/sandbox/new")
	if !strings.Contains(sb, `<option value="exec"></option>`) || !strings.Contains(sb, `<legend class="label">Network</legend>`) {
		t.Error("the sandbox form does not suggest exec or has no Network legend")
	}
	bi := mustGet(owner, "/versions/"+v.ID+"/grants/builtin/new")
	if strings.Contains(bi, `<option value="ask_user"`) || !strings.Contains(bi, `<option value="session"`) {
		t.Errorf("the built-in picker offers a granted built-in or hides a free one:\n%s", bi)
	}
	if page := mustGet(owner, "/versions/"+v.ID+"/grants/builtin/ask_user/edit"); !strings.Contains(page, `<option value="ask_user" selected`) {
		t.Error("editing ask_user does not offer ask_user")
	}
	page := mustGet(owner, "/versions/"+v.ID)
	if !strings.Contains(page, `<p class="small">Ask the user a question in a form`) ||
		!strings.Contains(page, `<pre tabindex="0" class="small" aria-label="Input schema of builtin__ask_user__ask">{`) ||
		strings.Contains(page, `title="Ask the user`) {
		t.Errorf("What the model sees lacks descriptions or schemas:\n%s", page)
	}
}

// Add rule adds a row, Remove takes one out, and the saved grant has
// exactly the rules left on screen.
func TestBrowserToolRuleRowsAddAndRemove(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	e.installTestFunction()
	_, v := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", knownToolsConfig); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	ctx := browserCtx(t)
	rows := `document.querySelectorAll("[data-rule-row]").length`
	steps(t, ctx, "open the sandbox form", append(ownerSignIn(e.srv.URL),
		chromedp.Navigate(e.srv.URL+"/versions/"+v.ID+"/grants/sandbox/workbench/edit"),
		chromedp.WaitVisible(css(`[data-testid=rule-add]`)),
	)...)
	before, err := chromedp.Run(ctx, chromedp.Evaluate[int](rows))
	if err != nil {
		t.Fatal(err)
	}
	steps(t, ctx, "add two rules, remove the first",
		chromedp.Click(css(`[data-testid=rule-add]`)),
		chromedp.Click(css(`[data-testid=rule-add]`)),
		poll(rows+` === `+itoa(before+2)),
		chromedp.Click(css(`[data-testid=rule-remove-0]`)),
		poll(rows+` === `+itoa(before+1)),
	)
	if label := attr(t, ctx, `[data-testid=rule-tool-0]`, "aria-label"); label != "Tool of rule 1" {
		t.Fatalf("after a removal the first rule is labelled %q", label)
	}
	steps(t, ctx, "remove every row but one, set it to deny exec, save",
		void(chromedp.Evaluate[bool](`(() => { const rs = document.querySelectorAll("[data-rule-row]"); for (let i = 1; i < rs.length; i++) rs[i].querySelector("[data-rule-remove]").click(); return true })()`)),
		poll(rows+` === 1`),
		chromedp.SetValue(css(`[data-testid=rule-tool-0]`), "exec"),
		chromedp.SetValue(css(`[data-testid=rule-policy-0]`), "deny"),
		chromedp.Click(css(`[data-testid=grant-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=model-sees]`)),
	)
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !strings.Contains(string(got.Config), `"tool_rules":{"exec":"deny"}`) {
		t.Fatalf("the saved sandbox grant: %s", got.Config)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Compare says what a change does to each tool, the runtime working out the
// effective policies of both versions: a rule turned from deny to allow, a
// rule added over a default, a built-in granted; unchanged tools are not listed.
func TestCompareShowsTheEffectPerTool(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	e.installTestFunction()
	agent, v1 := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v1.ID+"/config", knownToolsConfig); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	var v2 version
	if s := e.api(tok, "POST", "/agents/"+agent+"/versions", map[string]any{"from": v1.ID}, &v2); s != 201 {
		t.Fatalf("Version.create: %d", s)
	}
	changed := strings.NewReplacer(`"tool_rules": {"get_repo": "deny"}`, `"tool_rules": {"get_repo": "allow"}`,
		`"default_policy": "allow"}]`, `"default_policy": "allow", "tool_rules": {"exec": "ask"}}]`,
		`[{"name": "ask_user"}]`, `[{"name": "ask_user"}, {"name": "session"}]`).Replace(knownToolsConfig)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v2.ID+"/config", changed); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	page := mustGet(owner, "/versions/"+v2.ID+"/diff?against="+v1.ID)
	for _, want := range []string{
		"<code>fn__gh__get_repo</code>: Deny → Allow",
		"<code>sandbox__workbench__exec</code>: Allow → Ask first",
		"</code>: not granted → offered (no policy)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("Compare lacks %q", want)
		}
	}
	if n := strings.Count(page, `data-testid="diff-effect"`); n < 3 || strings.Contains(page, "builtin__ask_user__ask</code>") {
		t.Errorf("Compare lists %d effects, or an unchanged tool:\n%s", n, page)
	}
}

// An MCP server's tools, once a session has discovered them, are the tools
// its rules suggest.
func TestMCPGrantRulesSuggestDiscoveredTools(t *testing.T) {
	w := newWorld(t, consoleConfig)
	owner := w.browserOf()
	var draft version
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{"from": w.version}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	form := "/versions/" + draft.ID + "/grants/mcp/everything/edit"
	before := mustGet(owner, form)
	if strings.Contains(before, `<datalist id="rule-tools">`) {
		t.Fatal("tools suggested before any discovery")
	}
	s := w.session(w.vault)
	if st, c := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "hi"}, 10); st != 200 {
		t.Fatalf("echo: %d %+v", st, c)
	}
	page := mustGet(owner, form)
	for _, want := range []string{`<datalist id="rule-tools">`, `<option value="echo"></option>`, `<option value="get-sum"></option>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the MCP grant form lacks %s", want)
		}
	}
}
