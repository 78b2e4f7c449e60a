package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (w *fnWorld) call(token, sessionID, tool string, input any, wait float64) (int, call) {
	w.t.Helper()
	var c call
	st := w.api(token, "POST", "/sessions/"+sessionID+"/tool_calls", map[string]any{"tool": tool, "input": input, "model": "test-model", "wait_seconds": wait}, &c)
	return st, c
}

// mcpSession connects the official Go SDK client to a session's MCP endpoint
// with the session's token.
func (w *fnWorld) mcpSession(s session) *mcp.ClientSession {
	w.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "fn-agent", Version: "1"}, nil)
	cs, err := client.Connect(w.t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s.ID,
		HTTPClient: &http.Client{Transport: bearer{s.Token, http.DefaultTransport}}}, nil)
	if err != nil {
		w.t.Fatalf("connect to the MCP endpoint: %v", err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

func TestShippedPackagesThroughMCP(t *testing.T) {
	w := newFnWorld(t)
	cs := w.mcpSession(w.withVault)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	schemas := map[string]string{}
	for _, tool := range list.Tools {
		b, _ := json.Marshal(tool)
		schemas[tool.Name] = string(b)
	}
	for _, name := range []string{"fn__jq__query", "fn__page__parse", "fn__js__run", "fn__gh__get_repo", "fn__gh__list_issues",
		"fn__gh__get_issue", "fn__gh__list_pulls", "fn__gh__get_file"} {
		if !strings.Contains(schemas[name], `"inputSchema"`) {
			t.Errorf("tools/list lacks %s with its input schema: %q", name, schemas[name])
		}
	}
	for _, c := range w.cases() {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.input})
			if err != nil || res.IsError == c.ok {
				t.Fatalf("tools/call: %v %+v", err, res)
			}
			text := resultText(res)
			for _, w := range c.says {
				if !strings.Contains(text, w) {
					t.Errorf("%s lacks %s", text, w)
				}
			}
		})
	}
	bare := w.mcpSession(w.withoutVault)
	res, err := bare.CallTool(t.Context(), &mcp.CallToolParams{Name: "fn__gh__get_repo",
		Arguments: map[string]any{"owner": "octo", "repo": "hello", "api_url": w.ghURL}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "HTTP 401: Bad credentials") {
		t.Fatalf("github over MCP without the vault: %v %+v", err, res)
	}
	w.checkTokenNowhere(w.withVault.ID, w.withoutVault.ID)
}
