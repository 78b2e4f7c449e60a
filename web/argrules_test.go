package web_test

import (
	"html"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argRulesConfig: echo is allowed when its message starts with "hello ",
// denied when it holds "rm -rf", and asks first otherwise; get-sum is
// allowed for small numbers and asks (the grant's default) for the rest.
const argRulesConfig = `{"mcp_servers": [{"name": "everything", "url": "MCP_URL", "default_policy": "ask",
  "tool_rules": {
    "echo": {"policy": "ask", "rules": [
      {"policy": "allow", "input": {"message": {"glob": "hello *"}}},
      {"policy": "deny", "input": {"message": {"glob": "*rm -rf*"}}}]},
    "get-sum": {"rules": [{"policy": "allow", "input": {"a": {"at_most": 10}, "b": {"at_most": 10}}}]}}}]}`

type ruledCall struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Verdict    string `json:"verdict"`
	PolicyRule string `json:"policy_rule"`
}

// ruledCallOf is ToolCall.get with the rule that decided.
func ruledCallOf(w *world, id string) ruledCall {
	w.t.Helper()
	var c ruledCall
	if st := w.api(w.owner, "GET", "/tool_calls/"+id, nil, &c); st != 200 {
		w.t.Fatalf("ToolCall.get: %d", st)
	}
	return c
}

// actionRule is the policy_rule of the Action.list entry naming the call.
func actionRule(w *world, query, callID string) string {
	w.t.Helper()
	var acts []struct {
		Targets    []string `json:"targets"`
		PolicyRule string   `json:"policy_rule"`
	}
	if st := w.api(w.owner, "GET", "/actions?"+query, nil, &acts); st != 200 {
		w.t.Fatalf("Action.list?%s: %d", query, st)
	}
	for _, a := range acts {
		for _, id := range a.Targets {
			if id == callID {
				return a.PolicyRule
			}
		}
	}
	return "(no Action for " + callID + ")"
}

// TestArgRulesThroughTheAPI: a call allowed by a condition runs, one no
// rule matches asks first with the reason on its approval, one a deny rule
// matches is refused; each records the rule that decided, on the call, its
// Action, the approval, the Audit page and What the model sees.
func TestArgRulesThroughTheAPI(t *testing.T) {
	w := newWorld(t, argRulesConfig)
	s := w.session(w.vault)
	get := func(id string) ruledCall { return ruledCallOf(w, id) }

	// Allowed by rule 1 through the JSON API.
	_, c := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "hello world"}, 20)
	if c.Status != "succeeded" {
		t.Fatalf("echo hello: %+v", c)
	}
	if got := get(c.ID); got.Verdict != "allow" || got.PolicyRule != "rule 1: allow message matches `hello *`" {
		t.Fatalf("the allowed call records %+v", got)
	}
	if a := actionRule(w, "verb=ToolCall.create", c.ID); !strings.Contains(a, "rule 1: allow") {
		t.Fatalf("its Action's policy_rule: %q", a)
	}

	// Allowed by a condition through the MCP endpoint too.
	cs := w.mcpSession(s)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "mcp__everything__get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "5") {
		t.Fatalf("get-sum 2+3 over MCP: %v %+v", err, res)
	}

	// No rule matches: ask first, and the approval says why.
	waiting := w.callAsync(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "rm -r /workspace"}, 30)
	var items []struct {
		Call       string `json:"call"`
		PolicyRule string `json:"policy_rule"`
	}
	for range 200 {
		if st := w.api(w.owner, "GET", "/approvals", nil, &items); st != 200 {
			t.Fatalf("Approval.list: %d", st)
		}
		if len(items) == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := `no rule matched (message="rm -r /workspace"); the tool's own policy is ask`
	if len(items) != 1 || items[0].PolicyRule != want {
		t.Fatalf("the approval: %+v; want policy_rule %q", items, want)
	}
	_, page := w.browserOf().get("/approvals")
	if !strings.Contains(html.UnescapeString(page), "asked because: "+want) {
		t.Fatal("the approval card does not say why it asked")
	}

	// Numbers over the bound: get-sum falls to the grant's default, ask.
	_, big := w.call(s.Token, s.ID, "mcp__everything__get-sum", map[string]any{"a": 2, "b": 300}, 0)
	if got := get(big.ID); got.Status != "awaiting_approval" || !strings.Contains(got.PolicyRule, "the grant's default policy is ask") {
		t.Fatalf("get-sum 2+300: %+v", got)
	}

	// A deny rule beats the allow rule that also matches.
	_, d := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "hello; rm -rf /"}, 5)
	if got := get(d.ID); got.Status != "refused" || got.PolicyRule != "rule 2: deny message matches `*rm -rf*`" {
		t.Fatalf("echo with rm -rf: %+v", got)
	}
	if a := actionRule(w, "verb=ToolCall.create&verdict=refused", d.ID); !strings.Contains(a, "rule 2: deny") {
		t.Fatalf("the refused Action's policy_rule: %q", a)
	}

	// The session's call log names the rule; Session.tools carries the rules.
	_, sp := w.browserOf().get("/sessions/" + s.ID)
	if !strings.Contains(html.UnescapeString(sp), "decided by: rule 1: allow message matches `hello *`") {
		t.Fatal("the session page's call log does not say which rule decided")
	}
	var offered []struct {
		Name  string `json:"name"`
		Rules []struct {
			Policy string `json:"policy"`
		} `json:"rules"`
	}
	if st := w.api(s.Token, "GET", "/sessions/"+s.ID+"/tools", nil, &offered); st != 200 {
		t.Fatalf("Session.tools: %d", st)
	}
	for _, o := range offered {
		if o.Name == "mcp__everything__echo" && (len(o.Rules) != 2 || o.Rules[1].Policy != "deny") {
			t.Fatalf("Session.tools' echo: %+v", o)
		}
	}

	// The Audit page and What the model sees name the rules.
	_, audit := w.browserOf().get("/audit?verb=ToolCall.create")
	if a := html.UnescapeString(audit); !strings.Contains(a, "decided by: rule 2: deny message matches `*rm -rf*`") || !strings.Contains(a, "decided by: rule 1: allow") {
		t.Fatal("the Audit page does not show which rule decided")
	}
	_, version := w.browserOf().get("/versions/" + w.version)
	if v := html.UnescapeString(version); !strings.Contains(v, "rule 1: allow a at most 10 and b at most 10") || !strings.Contains(v, "rule 2: deny message matches `*rm -rf*`") {
		t.Fatal("What the model sees does not list the argument rules")
	}
	// The waiting call is still waiting; let it go.
	select {
	case <-waiting:
		t.Fatal("the ask-first call returned before a decision")
	default:
	}
}

// TestBrowserApprovalCardSaysWhyItAsked: the approval card a person sees
// says which rule asked, or that none matched.
func TestBrowserApprovalCardSaysWhyItAsked(t *testing.T) {
	w := newWorld(t, argRulesConfig)
	s := w.session(w.vault)
	ctx := browserCtx(t)
	signIn(t, ctx, w, "owner@example.com")
	steps(t, ctx, "open the empty queue",
		chromedp.Navigate(w.srv.URL+"/approvals"),
		chromedp.WaitVisible(css(`[data-testid=approval-queue] [data-testid=empty]`)),
	)
	// The card arrives live, and says why it asked.
	w.callAsync(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "rm -r /workspace"}, 30)
	w.pending(w.owner, "", 1)
	steps(t, ctx, "the card arrives with its reason",
		watchDOM(`document.querySelector("[data-testid=approval-item] [data-testid=approval-why]") !== null`, 5*time.Second))
	want := `asked because: no rule matched (message="rm -r /workspace"); the tool's own policy is ask`
	if got := text(t, ctx, `[data-testid=approval-why]`); got != want {
		t.Fatalf("the live card says %q; want %q", got, want)
	}
	// Over get-sum's bound, the grant's default asks; both cards say so after a reload.
	w.callAsync(s.Token, s.ID, "mcp__everything__get-sum", map[string]any{"a": 1, "b": 99}, 30)
	w.pending(w.owner, "", 2)
	steps(t, ctx, "reload the queue",
		chromedp.Navigate(w.srv.URL+"/approvals"),
		watchDOM(`document.querySelectorAll("[data-testid=approval-why]").length === 2`, 5*time.Second))
	whys, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("[data-testid=approval-why]")].map(e => e.textContent).join("\n")`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(whys, "asked because: no rule matched (a=1, b=99); the grant's default policy is ask") || !strings.Contains(whys, want) {
		t.Fatalf("the cards say:\n%s", whys)
	}
}
