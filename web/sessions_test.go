package web_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// mcpToken is the bearer token the gate in front of server-everything wants.
const mcpToken = "mcp-secret-7f3a9c1e5b"

// world is an owner, an MCP server behind a gate, a vault holding its token,
// and a published version granting it, ready for sessions.
type world struct {
	*env
	owner   string // owner's API token
	mcpURL  string
	vault   string
	version string
	agent   string
}

func newWorld(t *testing.T, config string) *world {
	e := newEnv(t)
	w := &world{env: e, owner: e.owner().token(), mcpURL: mcptest.StartEverything(t, mcpToken)}
	var v struct{ ID string }
	if s := e.api(w.owner, "POST", "/vaults", map[string]any{"name": "customer-a"}, &v); s != 201 {
		t.Fatalf("Vault.create: %d", s)
	}
	w.vault = v.ID
	var cred map[string]any
	if s := e.api(w.owner, "PUT", "/vaults/"+v.ID+"/credentials", map[string]any{"prefix": w.mcpURL, "type": "bearer", "secret": mcpToken}, &cred); s != 200 {
		t.Fatalf("Credential.set: %d %v", s, cred)
	}
	agent, draft := e.agentWithDraft(w.owner)
	w.agent = agent
	config = strings.ReplaceAll(config, "MCP_URL", w.mcpURL)
	if s, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", config); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	if s := e.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); s != 200 {
		t.Fatalf("publish: %d", s)
	}
	w.version = draft.ID
	return w
}

type session struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

func (w *world) session(vaults ...string) session {
	w.t.Helper()
	var s session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": vaults, "title": "test"}, &s); st != 201 || s.Token == "" {
		w.t.Fatalf("Session.create: %d %+v", st, s)
	}
	return s
}

type call struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Verdict  string          `json:"verdict"`
	Reason   string          `json:"reason"`
	Error    string          `json:"error"`
	Output   json.RawMessage `json:"output"`
	Approval *struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"approval"`
}

func (w *world) call(token, sessionID, tool string, input any, wait float64) (int, call) {
	w.t.Helper()
	var c call
	st := w.api(token, "POST", "/sessions/"+sessionID+"/tool_calls", map[string]any{"tool": tool, "input": input, "model": "test-model", "wait_seconds": wait}, &c)
	return st, c
}

func (w *world) offered(token, sessionID string) map[string]string {
	w.t.Helper()
	var ts []struct{ Name, Policy string }
	if st := w.api(token, "GET", "/sessions/"+sessionID+"/tools", nil, &ts); st != 200 {
		w.t.Fatalf("Session.tools: %d", st)
	}
	out := map[string]string{}
	for _, t := range ts {
		out[t.Name] = t.Policy
	}
	return out
}

const everythingConfig = `{"mcp_servers": [{"name": "everything", "url": "MCP_URL", "default_policy": "ask",
  "tool_rules": {"echo": "allow", "get-sum": "deny"}}],
  "builtins": [{"name": "session"}, {"name": "ask_user"}]}`

func TestMCPCallsCarryTheVaultCredential(t *testing.T) {
	w := newWorld(t, everythingConfig)
	// Discovery needs the credential: a first session without the vault finds no MCP tools.
	bare := w.session()
	if tools := w.offered(bare.Token, bare.ID); len(tools) != 2 {
		t.Fatalf("without the vault's credential discovery still found tools: %v", tools)
	}
	s := w.session(w.vault)
	tools := w.offered(s.Token, s.ID)
	if tools["mcp__everything__echo"] != "allow" {
		t.Fatalf("echo not offered as allow: %v", tools)
	}
	if _, ok := tools["mcp__everything__get-sum"]; ok {
		t.Fatal("a denied tool is offered")
	}
	st, c := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "hello subako"}, 10)
	if st != 200 || c.Status != "succeeded" || !strings.Contains(string(c.Output), "Echo: hello subako") {
		t.Fatalf("echo: %d %+v %s", st, c, c.Output)
	}
	// Denied: refused and recorded.
	st, c = w.call(s.Token, s.ID, "mcp__everything__get-sum", map[string]any{"a": 1, "b": 2}, 1)
	if st != 200 || c.Status != "refused" || c.Verdict != "deny" {
		t.Fatalf("denied tool: %d %+v", st, c)
	}
	// What the vault's credential discovered is not offered to a session
	// without it: that session still has no MCP tools, and calling one is unknown.
	if tools := w.offered(bare.Token, bare.ID); len(tools) != 2 {
		t.Fatalf("a session without the vault sees another credential's tools: %v", tools)
	}
	var p problem
	// The agent learns that the server could not be listed; the operator why.
	if st := w.api(bare.Token, "POST", "/sessions/"+bare.ID+"/tool_calls", map[string]any{"tool": "mcp__everything__echo", "input": map[string]any{"message": "x"}}, &p); st != 404 || p.Code != "unknown_tool" ||
		!strings.Contains(p.Detail, `MCP server "everything" could not list its tools`) || strings.Contains(p.Detail, "401") || strings.Contains(p.Detail, "127.0.0.1") {
		t.Fatalf("echo without the credential, by the agent: %d %+v", st, p)
	}
	if st := w.api(w.owner, "POST", "/sessions/"+bare.ID+"/tool_calls", map[string]any{"tool": "mcp__everything__echo", "input": map[string]any{"message": "x"}}, &p); st != 404 || !strings.Contains(p.Detail, "401") {
		t.Fatalf("echo without the credential, by the operator: %d %+v", st, p)
	}
	// The session's page says which server is missing and why.
	page := mustGet(w.browserOf(), "/sessions/"+bare.ID)
	if msg := fieldTextAfter(page, `data-testid="undiscovered-everything"`); !strings.Contains(msg, "401") {
		t.Fatalf("the session page does not say why the server's tools are missing: %q", msg)
	}
	if strings.Contains(mustGet(w.browserOf(), "/sessions/"+s.ID), `data-testid="undiscovered-`) {
		t.Fatal("a session whose discovery worked shows a discovery problem")
	}
}

// fieldTextAfter returns the text of the first field error after marker.
func fieldTextAfter(page, marker string) string {
	_, rest, ok := strings.Cut(page, marker)
	if !ok {
		return ""
	}
	_, rest, _ = strings.Cut(rest, `class="field-error">`)
	msg, _, _ := strings.Cut(rest, "<")
	return msg
}

func TestToolCallBadInput(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	other := w.session(w.vault)
	cases := []struct {
		name, token, session, tool string
		input                      any
		status                     int
		code                       string
	}{
		{"unknown tool", s.Token, s.ID, "mcp__everything__nope", map[string]any{}, 404, "unknown_tool"},
		{"wrong schema", s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": 42}, 422, "invalid_input"},
		{"missing field", s.Token, s.ID, "builtin__session__rename", map[string]any{}, 422, "invalid_input"},
		{"another session's token", other.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "x"}, 403, "other_session"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p problem
			st := w.api(c.token, "POST", "/sessions/"+c.session+"/tool_calls", map[string]any{"tool": c.tool, "input": c.input}, &p)
			if st != c.status || p.Code != c.code {
				t.Fatalf("%d %+v", st, p)
			}
		})
	}
	// The body's own fields: a negative wait and a wrong type name the field in JSON's words.
	var p problem
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "builtin__session__rename", "input": map[string]any{"title": "x"}, "wait_seconds": -5}, &p); st != 422 || p.Field != "wait_seconds" || !strings.Contains(p.Detail, "0 or more") {
		t.Fatalf("a negative wait_seconds answered %d %+v", st, p)
	}
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "builtin__session__rename", "input": map[string]any{"title": "x"}, "wait_seconds": "soon"}, &p); st != 422 || p.Field != "wait_seconds" || p.Detail != "wait_seconds must be a number, not a string" {
		t.Fatalf("a string wait_seconds answered %d %+v", st, p)
	}
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": "ver_x", "vaults": "vlt_x"}, &p); st != 422 || p.Detail != "vaults must be an array of strings, not a string" {
		t.Fatalf("vaults as a string answered %d %+v", st, p)
	}
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{w.vault, w.vault}}, &p); st != 422 || p.Field != "vaults[1]" || p.Detail != `vault "customer-a" is listed twice` {
		t.Fatalf("a vault listed twice answered %d %+v", st, p)
	}
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "builtin__session__rename", "input": map[string]any{"title": "x"}}, &p); st != 401 || p.Code != "session_ended" {
		t.Fatalf("an ended session's token answered %d", st)
	}
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "builtin__session__rename", "input": map[string]any{"title": "x"}}, &p); st != 409 || p.Code != "session_ended" {
		t.Fatalf("a call in an ended session: %d %+v", st, p)
	}
}

func TestAskFirstApproveDenyAndRace(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	approver := w.person(w.browserOf(), "approver@example.com", "member").token()

	// Ask, then approve: the call runs and its output comes back through ToolCall.get.
	st, c := w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	if st != 202 || c.Status != "awaiting_approval" || c.Approval == nil {
		t.Fatalf("ask-first call: %d %+v", st, c)
	}
	if st := w.api(approver, "POST", "/approvals/"+c.Approval.ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve: %d", st)
	}
	got := w.waitFinal(s.Token, c.ID)
	if got.Status != "succeeded" {
		t.Fatalf("approved call: %+v", got)
	}

	// Ask, then deny with a reason: the caller gets the reason.
	_, c = w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	if st := w.api(approver, "POST", "/approvals/"+c.Approval.ID+"/deny", map[string]any{"reason": "not in production"}, nil); st != 200 {
		t.Fatalf("deny: %d", st)
	}
	got = w.waitFinal(s.Token, c.ID)
	if got.Status != "refused" || !strings.Contains(got.Reason, "not in production") {
		t.Fatalf("denied call: %+v", got)
	}

	// Two decisions at once: exactly one wins, the other learns who decided.
	_, c = w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	details := make([]string, 2)
	for i, verb := range []string{"approve", "deny"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p problem
			statuses[i] = w.api(approver, "POST", "/approvals/"+c.Approval.ID+"/"+verb, map[string]any{"reason": "race"}, &p)
			details[i] = p.Detail
		}()
	}
	wg.Wait()
	won, lost := 0, 0
	for i, st := range statuses {
		switch st {
		case 200:
			won++
		case 409:
			lost++
			if !strings.Contains(details[i], "by approver@example.com") {
				t.Errorf("the loser is not told who decided: %q", details[i])
			}
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("concurrent decisions: %v", statuses)
	}
}

func (w *world) waitFinal(token, id string) call {
	w.t.Helper()
	for range 100 {
		var c call
		w.api(token, "GET", "/tool_calls/"+id, nil, &c)
		if c.Status != "awaiting_approval" && c.Status != "queued" && c.Status != "running" && c.Status != "waiting_client" {
			return c
		}
		waitABit()
	}
	w.t.Fatalf("call %s never finished", id)
	return call{}
}

func TestBuiltinsAndClientTools(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	if st, c := w.call(s.Token, s.ID, "builtin__session__rename", map[string]any{"title": "Refund for order 17"}, 5); st != 200 || c.Status != "succeeded" {
		t.Fatalf("rename: %d %+v", st, c)
	}
	var got struct{ Title string }
	w.api(w.owner, "GET", "/sessions/"+s.ID, nil, &got)
	if got.Title != "Refund for order 17" {
		t.Fatalf("session title %q", got.Title)
	}
	if st := w.api(s.Token, "PUT", "/sessions/"+s.ID+"/clients/web", map[string]any{"tools": []map[string]any{{
		"name": "highlight_row", "description": "Highlight a row", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"row": map[string]any{"type": "integer"}}}}}}, nil); st != 200 {
		t.Fatalf("Client.connect: %d", st)
	}
	if w.offered(s.Token, s.ID)["client__web__highlight_row"] != "" {
		t.Fatal("client tool has a policy")
	}
	st, c := w.call(s.Token, s.ID, "client__web__highlight_row", map[string]any{"row": 3}, 0)
	if st != 202 || c.Status != "waiting_client" && c.Status != "queued" && c.Status != "running" {
		t.Fatalf("client call: %d %+v", st, c)
	}
	var next []call
	w.api(s.Token, "GET", "/sessions/"+s.ID+"/clients/web/calls?wait=5", nil, &next)
	if len(next) != 1 || next[0].ID != c.ID {
		t.Fatalf("ClientCall.next: %+v", next)
	}
	if st := w.api(s.Token, "POST", "/tool_calls/"+c.ID+"/result", map[string]any{"output": map[string]any{"highlighted": 3}}, nil); st != 200 {
		t.Fatalf("ToolCall.complete: %d", st)
	}
	if got := w.waitFinal(s.Token, c.ID); got.Status != "succeeded" || !strings.Contains(string(got.Output), "highlighted") {
		t.Fatalf("completed client call: %+v", got)
	}
	// ask_user: answered by an operator.
	_, q := w.call(s.Token, s.ID, "builtin__ask_user__ask", map[string]any{"question": "Refund in full?"}, 0)
	q = w.waitStatus(s.Token, q.ID, "waiting_client")
	if st := w.api(w.owner, "POST", "/tool_calls/"+q.ID+"/result", map[string]any{"output": map[string]any{"answer": "yes"}}, nil); st != 200 {
		t.Fatalf("operator answering ask_user: %d", st)
	}
	if got := w.waitFinal(s.Token, q.ID); !strings.Contains(string(got.Output), "yes") {
		t.Fatalf("ask_user: %+v", got)
	}
}

func (w *world) waitStatus(token, id, status string) call {
	w.t.Helper()
	for range 100 {
		var c call
		w.api(token, "GET", "/tool_calls/"+id, nil, &c)
		if c.Status == status {
			return c
		}
		waitABit()
	}
	w.t.Fatalf("call %s never reached %s", id, status)
	return call{}
}
