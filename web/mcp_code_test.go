package web_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// codeLine is one line mcp_code_client.mjs prints.
type codeLine struct {
	Type       string          `json:"type"`
	Tools      []string        `json:"tools"`
	Name       string          `json:"name"`
	IsError    bool            `json:"isError"`
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structured"`
	// Resource is the first content's embedded resource, when it is one.
	Resource *struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Blob     []byte `json:"blob"` // base64 on the wire
		Text     string `json:"text"`
	} `json:"resource"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type codeStep struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// codeClient runs the official TypeScript SDK client against /mcp with token,
// calling steps in order; it answers the tools it listed and each answer.
func codeClient(t *testing.T, e *env, token string, steps ...codeStep) ([]string, []codeLine) {
	t.Helper()
	b, _ := json.Marshal(steps)
	lines := tsClientLines[codeLine](t, filepath.Join("testdata", "mcp_code_client.mjs"), e.srv.URL+"/mcp", token, string(b))
	var tools []string
	var out []codeLine
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if len(out) != len(steps) {
					t.Fatalf("the client answered %d of %d steps: %+v", len(out), len(steps), out)
				}
				return tools, out
			}
			if l.Type == "tools" {
				tools = l.Tools
				continue
			}
			out = append(out, l)
		case <-timeout:
			t.Fatal("the client did not finish within 3 minutes")
		}
	}
}

// programAnswer is what do answers.
type programAnswer struct {
	Value  json.RawMessage `json:"value"`
	Log    []string        `json:"log"`
	Calls  int             `json:"calls"`
	Action string          `json:"action"`
	Error  *struct {
		Code, Message string
	} `json:"error"`
}

func decodeProgram(t *testing.T, l codeLine) programAnswer {
	t.Helper()
	var a programAnswer
	if l.Type != "result" || json.Unmarshal([]byte(l.Text), &a) != nil {
		t.Fatalf("do answered %+v", l)
	}
	return a
}

// codeAction is an Action as Action.list shows it, with its program links.
type codeAction struct {
	ID                string `json:"id"`
	Verb              string `json:"verb"`
	Verdict           string `json:"verdict"`
	ParentID          string `json:"parent_id"`
	Program           string `json:"program"`
	Client            string `json:"client_info"`
	MissingPermission string `json:"missing_permission"`
}

func (e *env) actions(token, verb string) []codeAction {
	e.t.Helper()
	var out []codeAction
	if st := e.api(token, "GET", "/actions?limit=500&verb="+verb, nil, &out); st != 200 {
		e.t.Fatalf("Action.list: %d", st)
	}
	return out
}

const approveTwo = `type Approval = { id: string; tool: string }
const waiting: Approval[] = await $.Approval.list({ state: "pending" })
console.log("waiting", waiting.length)
const approved: string[] = []
for (const a of waiting.slice(0, 2)) {
  await $.Approval.approve({ approval: a.id, reason: "code mode" })
  approved.push(a.id)
}
return { approved, left: waiting.length - approved.length }`

// A person's token drives /mcp with the official TypeScript SDK: search finds
// the verb, fetch reads its types, and one do program approves two of three
// waiting calls: two Approval.approve Actions, each linked to the program's.
func TestCodeModeSearchFetchDoApprovesTwo(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	for range 3 {
		if st, c := w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0); st != 202 || c.Approval == nil {
			t.Fatalf("ask-first call: %d %+v", st, c)
		}
	}
	tools, res := codeClient(t, w.env, w.owner,
		codeStep{"search", map[string]any{"query": "approve"}},
		codeStep{"search", map[string]any{"query": w.agent}},
		codeStep{"fetch", map[string]any{"id": "Approval.approve"}},
		codeStep{"fetch", map[string]any{"id": s.ID}},
		codeStep{"do", map[string]any{"program": approveTwo}})
	if strings.Join(tools, ",") != "search,fetch,do" {
		t.Fatalf("tools %v", tools)
	}
	if res[0].IsError || !strings.Contains(res[0].Text, `"id":"Approval.approve"`) {
		t.Fatalf("search approve: %+v", res[0])
	}
	if res[1].IsError || !strings.Contains(res[1].Text, `"kind":"record"`) || !strings.Contains(res[1].Text, w.agent) {
		t.Fatalf("search for the agent's id finds no record: %+v", res[1])
	}
	if res[2].IsError || !strings.Contains(res[2].Text, "/approvals/:approval/approve") {
		t.Fatalf("fetch Approval.approve: %+v", res[2])
	}
	if res[3].IsError || !strings.Contains(res[3].Text, s.ID) {
		t.Fatalf("fetch the session: %+v", res[3])
	}
	run := decodeProgram(t, res[4])
	if res[4].IsError || run.Error != nil || run.Calls != 3 {
		t.Fatalf("do: %+v %s", run, res[4].Text)
	}
	var value struct {
		Approved []string
		Left     int
	}
	if err := json.Unmarshal(run.Value, &value); err != nil || len(value.Approved) != 2 || value.Left != 1 {
		t.Fatalf("value %s", run.Value)
	}
	if strings.Join(run.Log, "|") != "waiting 3" {
		t.Fatalf("log %q", run.Log)
	}

	programs := w.actions(w.owner, "Program.run")
	if len(programs) != 1 || programs[0].ID != run.Action || programs[0].Program != approveTwo || programs[0].Verdict != "allowed" {
		t.Fatalf("Program.run Actions %+v (do said %s)", programs, run.Action)
	}
	linked := 0
	for _, a := range w.actions(w.owner, "Approval.approve") {
		if a.ParentID == run.Action && a.Verdict == "allowed" {
			linked++
		}
	}
	if linked != 2 {
		t.Fatalf("%d Approval.approve Actions linked to the program %s, want 2: %+v", linked, run.Action, w.actions(w.owner, "Approval.approve"))
	}
	var left []struct{ ID string }
	if w.api(w.owner, "GET", "/approvals?state=pending", nil, &left); len(left) != 1 {
		t.Fatalf("waiting approvals after the program: %+v", left)
	}
}

// Programs past their deadline, memory or call count are stopped with an
// error naming the limit; a viewer's program calling Agent.create catches an
// error naming the missing permission, and the refusal is recorded.
func TestCodeModeLimitsAndRefusals(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	ownerToken := owner.token()
	viewer := e.person(owner, "viewer@example.com", "viewer").token()
	_, res := codeClient(t, e, ownerToken,
		codeStep{"do", map[string]any{"program": "while (true) {}"}},
		codeStep{"do", map[string]any{"program": "const a: string[] = []; while (true) a.push('x'.repeat(4096) + a.length)"}},
		codeStep{"do", map[string]any{"program": "for (;;) await $.Agent.list({})"}},
		codeStep{"do", map[string]any{"program": "return 'x'.repeat(2 << 20)"}},
		codeStep{"do", map[string]any{"program": "return (("}})
	for i, want := range []struct{ code, says string }{
		{"deadline_exceeded", "deadline of 10s"},
		{"memory_exceeded", "memory limit of 67108864 bytes (64 MiB)"},
		{"too_many_calls", "the limit is 100 a program"},
		{"result_too_large", "the limit is 1048576 bytes (1 MiB)"},
		{"syntax_error", "at the end of the program"},
	} {
		run := decodeProgram(t, res[i])
		if !res[i].IsError || run.Error == nil || run.Error.Code != want.code || !strings.Contains(run.Error.Message, want.says) {
			t.Errorf("program %d: want %s saying %q, got %s", i, want.code, want.says, res[i].Text)
		}
	}
	if n := len(e.actions(ownerToken, "Agent.list")); n != 100 {
		t.Errorf("the call-count bomb ran %d Agent.list, want 100", n)
	}
	for _, a := range e.actions(ownerToken, "Program.run") {
		if a.Verdict != "failed" {
			t.Errorf("a stopped program's Action is %s, want failed", a.Verdict)
		}
	}

	prog := `try {
  await $.Agent.create({ name: "not-mine" })
  return "created"
} catch (e: any) {
  return { code: e.code, missing: e.missing_permission, message: e.message }
}`
	_, res = codeClient(t, e, viewer, codeStep{"do", map[string]any{"program": prog}})
	run := decodeProgram(t, res[0])
	var caught struct{ Code, Missing, Message string }
	if err := json.Unmarshal(run.Value, &caught); err != nil || caught.Code != "permission_denied" || caught.Missing != "Agent.create" ||
		!strings.Contains(caught.Message, "Agent.create") {
		t.Fatalf("the viewer's program caught %s (%s)", run.Value, res[0].Text)
	}
	refused := 0
	for _, a := range e.actions(ownerToken, "Agent.create") {
		if a.Verdict == "refused" && a.ParentID == run.Action && a.MissingPermission == "Agent.create" {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("the refusal is not recorded, linked to the program: %+v", e.actions(ownerToken, "Agent.create"))
	}
}

// A token made with tools "flat" gets one MCP tool per verb it holds, named as
// the verb, dispatched through the verb's API route: a viewer's flat token
// lists no Agent.create, and calling it anyway is refused naming the
// permission, recorded as the API's refusal.
func TestCodeModeFlatTools(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	ownerToken := owner.token()
	viewerBrowser := e.person(owner, "viewer@example.com", "viewer")
	viewer := viewerBrowser.token()
	var p problem
	if st := e.api(ownerToken, "POST", "/tokens", map[string]any{"name": "x", "tools": "tree"}, &p); st != 422 || p.Field != "tools" {
		t.Fatalf("tools tree: %d %+v", st, p)
	}
	flat := func(token string) string {
		var tok struct{ Token, Tools string }
		if st := e.api(token, "POST", "/tokens", map[string]any{"name": "flat", "expires": "1h", "tools": "flat"}, &tok); st != 201 || tok.Tools != "flat" {
			t.Fatalf("Token.create tools flat: %d %+v", st, tok)
		}
		return tok.Token
	}
	ownerTools, res := codeClient(t, e, flat(ownerToken),
		codeStep{"Agent.create", map[string]any{"name": "flat-made"}},
		codeStep{"Agent.list", map[string]any{}})
	if !slices.Contains(ownerTools, "Agent.create") || !slices.Contains(ownerTools, "Approval.approve") || slices.Contains(ownerTools, "do") {
		t.Fatalf("owner's flat tools: %v", ownerTools)
	}
	if res[0].IsError || !strings.Contains(res[1].Text, "flat-made") {
		t.Fatalf("flat calls: %+v", res)
	}
	viewerTools, res := codeClient(t, e, flat(viewer), codeStep{"Agent.create", map[string]any{"name": "not-mine"}})
	if slices.Contains(viewerTools, "Agent.create") || !slices.Contains(viewerTools, "Agent.list") || len(viewerTools) >= len(ownerTools) {
		t.Fatalf("viewer's flat tools (%d, owner's %d): %v", len(viewerTools), len(ownerTools), viewerTools)
	}
	if !res[0].IsError || !strings.Contains(res[0].Text, "missing permission Agent.create") {
		t.Fatalf("the viewer's Agent.create: %+v", res[0])
	}
	refused := 0
	for _, a := range e.actions(ownerToken, "Agent.create") {
		if a.Verdict == "refused" && a.MissingPermission == "Agent.create" {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("the refusal is not recorded: %+v", e.actions(ownerToken, "Agent.create"))
	}
	// The Tokens page offers the setting and shows it.
	if _, page := viewerBrowser.get("/tokens"); !strings.Contains(page, `name="tools"`) || !strings.Contains(page, "MCP: one tool per verb") {
		t.Fatalf("the Tokens page neither offers nor shows tools")
	}
}
