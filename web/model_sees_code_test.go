package web_test

import (
	"strings"
	"testing"
)

// TestModelSeesCodeModeTools: a version whose tools are offered as code says
// in "What the model sees" that the model sees search, fetch and do, and
// shows each tool by its $ name; a flat version shows neither.
func TestModelSeesCodeModeTools(t *testing.T) {
	e := newEnv(t)
	b := e.owner()
	tok := b.token()
	_, draft := e.agentWithDraft(tok)
	if st, body := e.rawAPI(tok, "PUT", "/versions/"+draft.ID+"/config", `{"builtins": [{"name": "ask_user"}]}`); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	_, page := b.get("/versions/" + draft.ID)
	if strings.Contains(page, `data-testid="model-sees-code"`) || strings.Contains(page, `data-testid="tool-code"`) ||
		!strings.Contains(page, "builtin__ask_user__ask") {
		t.Fatalf("a flat version's What the model sees speaks of code, or lacks the flat tool:\n%s", page)
	}
	if st, body := e.rawAPI(tok, "PUT", "/versions/"+draft.ID+"/config", `{"builtins": [{"name": "ask_user"}], "tools_as": "code"}`); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	_, page = b.get("/versions/" + draft.ID)
	if !strings.Contains(page, `data-testid="model-sees-code"`) || !strings.Contains(page, "three tools, <code>search</code>, <code>fetch</code> and <code>do</code>") ||
		!strings.Contains(page, `data-testid="tool-code">$.builtin.ask_user.ask<`) {
		t.Fatalf("a code-mode version's What the model sees does not say search, fetch and do with the $ names:\n%s", page)
	}
}
