package web_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// TestToolsClientsCannotTakeAreSkippedAndShown grants a server that lists,
// beside echo, a tool whose full name has a dot, one whose full name is too
// long, and one with an oversized description: only echo is offered (API
// and MCP), the session page lists the others with why, and calling one
// answers unknown_tool with that reason. A 400 MB answer of flood is a
// failed call naming the limit, and the server answers on.
func TestToolsClientsCannotTakeAreSkippedAndShown(t *testing.T) {
	long := strings.Repeat("x", 60) // mcp__orders__ + 60 = 73 characters
	wordy := mcptest.NewTool(&mcp.Tool{Name: "wordy", Description: strings.Repeat("w", 9000)},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	url, _ := mcptest.StartFlood(t, false, 400<<20, mcptest.Echo(), mcptest.Named("get.order"), mcptest.Named(long), wordy)

	w, owner := mcpWorld(t, "orders", url)
	e := w.env
	s := w.session()

	var offered []struct{ Name string }
	if st := e.api(s.Token, "GET", "/sessions/"+s.ID+"/tools", nil, &offered); st != 200 {
		t.Fatalf("Session.tools: %d", st)
	}
	var names []string
	for _, o := range offered {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	if want := []string{"mcp__orders__echo", "mcp__orders__flood"}; !slices.Equal(names, want) {
		t.Fatalf("Session.tools offers %v; want %v", names, want)
	}
	var vtools []struct{ Name string }
	if st := e.api(w.owner, "GET", "/versions/"+w.version+"/tools", nil, &vtools); st != 200 || len(vtools) != 2 {
		t.Fatalf("Version.tools: %d %+v; want echo and flood only", st, vtools)
	}
	listed, err := w.mcpSession(s).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Tools) != 2 {
		t.Fatalf("MCP tools/list has %d tools; want echo and flood only", len(listed.Tools))
	}

	_, page := owner.get("/sessions/" + s.ID)
	for _, want := range []string{`data-testid="skipped-tools"`, "mcp__orders__get.order", `&#39;.&#39; at position 17`,
		"mcp__orders__" + long, "is 73 characters; clients take at most 64", "mcp__orders__wordy", "the limit is 8 KiB (--mcp-max-description-bytes)"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the session page does not show %q among skipped tools", want)
		}
	}

	st, body := e.rawAPI(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", `{"tool": "mcp__orders__get.order", "input": {}}`)
	var p problem
	_ = json.Unmarshal(body, &p)
	if st != 404 || p.Code != "unknown_tool" || !strings.Contains(p.Detail, "skipped") || !strings.Contains(p.Detail, "clients take only") {
		t.Fatalf("call of a skipped tool: %d %s; want 404 unknown_tool with the reason", st, body)
	}

	var c call
	if st := e.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__orders__flood", "input": map[string]any{}}, &c); st != 200 ||
		c.Status != "failed" || !strings.Contains(c.Error, "larger than 4194304 bytes (4 MiB)") || !strings.Contains(c.Error, "--mcp-max-response-bytes") {
		t.Fatalf("a 400 MB answer: %d %+v; want a failed call naming the limit and its flag", st, c)
	}
	if st := e.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__orders__echo", "input": map[string]any{"message": "hi"}}, &c); st != 200 ||
		c.Status != "succeeded" {
		t.Fatalf("echo after the flood: %d %+v", st, c)
	}
}
