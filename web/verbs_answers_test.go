package web_test

import (
	"encoding/json"
	"testing"

	"github.com/subako/subako/runtime/verbs"
)

// The registry's output schemas (what /api/v1/openapi.json and $.d.ts
// declare) hold the real answers: a fresh session (not ended), a draft
// version (not published), a waiting approval (not decided) and its call
// (not finished) are answered with null times, and the schemas say so.
func TestVerbAnswersMatchTheirDeclaredOutput(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	if st, c := w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0); st != 202 || c.Approval == nil {
		t.Fatalf("ask-first call: %d %+v", st, c)
	}
	var draft struct{ ID string }
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{"from": w.version}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	for _, c := range []struct{ verb, path string }{
		{"Session.get", "/sessions/" + s.ID},
		{"Session.list", "/sessions"},
		{"Version.get", "/versions/" + draft.ID},
		{"Version.list", "/agents/" + w.agent + "/versions"},
		{"Approval.list", "/approvals"},
		{"ToolCall.list", "/sessions/" + s.ID + "/tool_calls"},
		{"Agent.get", "/agents/" + w.agent},
		{"Action.list", "/actions"},
		{"Token.list", "/tokens"},
		{"Vault.get", "/vaults/" + w.vault},
	} {
		v, ok := verbs.Get(c.verb)
		if !ok || v.Output == nil {
			t.Fatalf("%s declares no output", c.verb)
		}
		rs, err := v.Output.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", c.verb, err)
		}
		var answer any
		if st := w.api(w.owner, "GET", c.path, nil, &answer); st != 200 {
			t.Fatalf("%s: %d", c.verb, st)
		}
		if err := rs.Validate(answer); err != nil {
			b, _ := json.Marshal(answer)
			t.Errorf("%s answers what its output schema refuses: %v\n%.600s", c.verb, err, b)
		}
	}
}
