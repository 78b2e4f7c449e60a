package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// loopSchema makes a validator recurse until the process dies of a stack
// overflow (github.com/google/jsonschema-go follows $ref without a guard).
const loopSchema = `{"type":"object","$ref":"#"}`

// A tool whose input schema refers back to itself without reading into the
// value took the whole server down (fatal stack overflow) at its first call:
// an MCP server could list one, and a session's own agent could declare one
// as a client tool. The MCP tool is skipped with the reason, the client tool
// refused naming the field, and the server answers on. A tool whose schema
// is not of type "object" is skipped too: model APIs refuse the whole tool
// list for it, as for a bad name.
func TestSelfReferringSchemasCannotCrashTheServer(t *testing.T) {
	url := mcptest.StartRaw(t, func(method string) string {
		if method == "tools/list" {
			return `"result":{"tools":[{"name":"loop","description":"x","inputSchema":` + loopSchema + `},` +
				`{"name":"tree","description":"y","inputSchema":{"type":"object","properties":{"child":{"$ref":"#"}}}},` +
				`{"name":"str","description":"z","inputSchema":{"type":"string"}}]}`
		}
		return `"result":{"content":[{"type":"text","text":"called"}]}`
	})
	w, owner := mcpWorld(t, "raw", url)
	e := w.env
	s := w.session()

	if got := w.offered(s.Token, s.ID); len(got) != 1 || got["mcp__raw__tree"] == "" {
		t.Fatalf("Session.tools offers %v; want the tree tool only", got)
	}
	_, page := owner.get("/sessions/" + s.ID)
	for _, want := range []string{"mcp__raw__loop", "refers back to the top", "mcp__raw__str", "must be a JSON Schema of type &#34;object&#34;"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the session page does not show %q among skipped tools", want)
		}
	}
	st, body := e.rawAPI(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", `{"tool": "mcp__raw__loop", "input": {}}`)
	var p problem
	_ = json.Unmarshal(body, &p)
	if st != 404 || p.Code != "unknown_tool" || !strings.Contains(p.Detail, "refers back") {
		t.Fatalf("a call of the looping tool: %d %s; want 404 unknown_tool saying why", st, body)
	}
	if st, c := w.call(s.Token, s.ID, "mcp__raw__tree", map[string]any{"child": map[string]any{}}, 5); st != 200 || c.Status != "succeeded" {
		t.Fatalf("the tree tool: %d %+v", st, c)
	}

	st, body = e.rawAPI(s.Token, "PUT", "/sessions/"+s.ID+"/clients/web",
		`{"tools": [{"name": "spin", "description": "d", "input_schema": `+loopSchema+`}]}`)
	_ = json.Unmarshal(body, &p)
	if st != 422 || !strings.HasPrefix(p.Field, "tools[0].input_schema") || !strings.Contains(p.Detail, "refers back") {
		t.Fatalf("Client.connect with a looping schema: %d %s; want 422 naming the schema", st, body)
	}
	if st, _ := e.rawAPI(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", `{"tool": "client__web__spin", "input": {}}`); st != 404 {
		t.Fatalf("a call of the refused client tool answered %d; want 404", st)
	}
}

// mcpWorld starts a server whose published version grants the MCP server
// at url as grant, allowing every tool; it returns it and the owner.
func mcpWorld(t *testing.T, grant, url string) (*world, *client) {
	t.Helper()
	e := newEnv(t)
	owner := e.owner()
	w := &world{env: e, owner: owner.token()}
	_, draft := e.agentWithDraft(w.owner)
	cfg := `{"mcp_servers": [{"name": "` + grant + `", "url": "` + url + `", "default_policy": "allow"}]}`
	if st, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", cfg); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := e.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("Version.publish: %d", st)
	}
	w.version = draft.ID
	return w, owner
}
