package web_test

import (
	"strings"
	"testing"
)

// A session's agent token acts on its own session only; the Audit page read
// "ToolCall.create * (session)" as if it held every session.
func TestAuditShowsASessionTokensScopeAsItsSession(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	id, agent := e.sessionOf(tok, e.publishedEmpty(tok), nil)
	// Refused (no such tool) but recorded with the permission that let it try.
	e.api(agent, "POST", "/sessions/"+id+"/tool_calls", map[string]any{"tool": "no_such_tool", "input": map[string]any{}}, nil)
	_, page := owner.get("/audit?verb=ToolCall.create")
	if !strings.Contains(page, "ToolCall.create session:"+id+" (its own session)") || strings.Contains(page, "* (session)") {
		i := strings.Index(page, "ToolCall.create")
		t.Errorf("the Audit page does not show the agent's ToolCall.create scoped to its session: %s", page[max(i-200, 0):])
	}
}
