package web_test

import (
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox/local"
)

const argRulesSandboxConfig = `{
  "sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
    "network": {"type": "none"}, "default_policy": "deny",
    "tool_rules": {"exec": {"policy": "ask", "rules": [
      {"policy": "allow", "command": "echo *"},
      {"policy": "deny", "command": "rm -rf *"}]}}}]
}`

// TestArgRulesSandboxExec: in a real sandbox, a command a pattern allows
// runs at once; the same command chained with another asks first, with the
// reason on its approval; a chain holding a denied command is refused.
func TestArgRulesSandboxExec(t *testing.T) {
	w := newSandboxWorld(t, argRulesSandboxConfig, local.Config{})
	s := w.session()
	get := func(id string) ruledCall { return ruledCallOf(w.world, id) }
	if out := w.exec(s, "echo allowed by a pattern"); out.Stdout != "allowed by a pattern\n" {
		t.Fatalf("echo: %+v", out)
	}
	_, c := w.call(s.Token, s.ID, execTool, map[string]any{"command": "echo hi; id"}, 0)
	if got := get(c.ID); got.Status != "awaiting_approval" || got.PolicyRule != "no rule matched `echo hi; id`; the tool's own policy is ask" {
		t.Fatalf("echo chained with id: %+v", got)
	}
	var items []struct {
		Call       string `json:"call"`
		PolicyRule string `json:"policy_rule"`
	}
	if st := w.api(w.owner, "GET", "/approvals", nil, &items); st != 200 || len(items) != 1 || !strings.HasPrefix(items[0].PolicyRule, "no rule matched `echo hi; id`") {
		t.Fatalf("Approval.list: %d %+v", st, items)
	}
	_, d := w.call(s.Token, s.ID, execTool, map[string]any{"command": "echo ok && rm -rf /workspace"}, 5)
	if got := get(d.ID); got.Status != "refused" || got.PolicyRule != "rule 2: deny command `rm -rf *`" {
		t.Fatalf("a chain with rm -rf: %+v", got)
	}
}
