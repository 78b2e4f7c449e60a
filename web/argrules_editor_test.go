package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestGrantFormEditsArgumentRules: the grant editor takes a tool rule's
// argument rules as JSON, shows them again to edit, lists them in words on
// the version page, and refuses a bad one under the rules with the field
// and the limit named.
func TestGrantFormEditsArgumentRules(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	_, v := e.agentWithDraft(tok)
	form := func(policy, when string) url.Values {
		return url.Values{"name": {"box"}, "release": {"2026"}, "network": {"none"}, "default_policy": {"deny"},
			"rule_tool": {"exec"}, "rule_policy": {policy}, "rule_when": {when}}
	}
	bad := []struct{ what, when, want string }{
		{"not JSON", `[{"policy": "allow", "command": "git *"`, `the argument rules for "exec" are not valid JSON`},
		{"not a list", `{"policy": "allow"}`, `must be a JSON list`},
		{"pattern too long", `[{"policy": "allow", "command": "` + strings.Repeat("g", 300) + `"}]`,
			`rule 1 of "exec"'s command pattern must be at most 256 characters; it has 300`},
		{"no condition", `[{"policy": "allow", "command": "git *"}, {"policy": "deny"}]`, `rule 2 of "exec" has no condition`},
		{"unknown operator", `[{"policy": "allow", "input": {"cwd": {"regex": ".*"}}}]`, `unknown field "regex"`},
	}
	for _, b := range bad {
		resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form("ask", b.when))
		if msg := html.UnescapeString(fieldText(page, "tool_rules-error")); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, b.want) {
			t.Errorf("%s: answered %d with %q; want %q", b.what, resp.StatusCode, msg, b.want)
		}
		if !strings.Contains(html.UnescapeString(page), strings.TrimSpace(b.when)) {
			t.Errorf("%s: the form lost what was typed", b.what)
		}
	}
	when := `[{"policy": "allow", "command": "git *"}, {"policy": "deny", "command": "git push *"}]`
	if resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form("ask", when)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving argument rules answered %d: %s", resp.StatusCode, fieldText(page, "tool_rules-error"))
	}
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !strings.Contains(string(got.Config), `"exec":{"policy":"ask","rules":[{"policy":"allow","command":"git *"},{"policy":"deny","command":"git push *"}]}`) {
		t.Fatalf("the saved config: %s", got.Config)
	}
	_, page := owner.get("/versions/" + v.ID)
	if p := html.UnescapeString(page); !strings.Contains(p, "exec rule 1: allow command `git *`") || !strings.Contains(p, "exec rule 2: deny command `git push *`") {
		t.Fatal("the version page does not list the argument rules")
	}
	_, edit := owner.get("/versions/" + v.ID + "/grants/sandbox/box/edit")
	if p := html.UnescapeString(edit); !strings.Contains(p, `"command": "git push *"`) {
		t.Fatal("the edit form does not show the argument rules to edit")
	}
	// The grant's default for unmatched calls: policy left out.
	if resp, _ := owner.post("/versions/"+v.ID+"/grants/sandbox/box", form("inherit", `[{"policy": "allow", "command": "npm test"}]`)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving with the grant's default answered %d", resp.StatusCode)
	}
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !strings.Contains(string(got.Config), `"exec":{"rules":[{"policy":"allow","command":"npm test"}]}`) {
		t.Fatalf("the saved config: %s", got.Config)
	}
}
