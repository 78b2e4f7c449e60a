package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request an MCP client makes.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpSession connects the official Go SDK client to a session's MCP endpoint.
func (w *world) mcpSession(s session) *mcp.ClientSession {
	w.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := client.Connect(w.t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s.ID,
		HTTPClient: &http.Client{Transport: bearer{s.Token, http.DefaultTransport}}}, nil)
	if err != nil {
		w.t.Fatalf("connect to the MCP endpoint: %v", err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestMCPEndpointListCallDenyAsk(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	ctx := t.Context()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
	}
	if !names["mcp__everything__echo"] || !names["builtin__session__rename"] {
		t.Fatalf("tools/list lacks offered tools: %v", names)
	}
	if names["mcp__everything__get-sum"] {
		t.Fatal("tools/list offers a denied tool")
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": "over mcp"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "Echo: over mcp") {
		t.Fatalf("echo over MCP: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "refused") {
		t.Fatalf("a denied tool over MCP: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": 7}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "schema") {
		t.Fatalf("bad input over MCP: %v %+v", err, res)
	}

	// Ask first: the MCP call waits for the decision, then answers.
	approver := w.person(w.browserOf(), "approver@example.com", "member").token()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(context.WithoutCancel(ctx), &mcp.CallToolParams{Name: "mcp__everything__get-env", Arguments: map[string]any{}})
		if err != nil {
			t.Errorf("ask-first over MCP: %v", err)
		}
		done <- r
	}()
	var pending []struct{ ID string }
	for i := 0; i < 100 && len(pending) == 0; i++ {
		waitABit()
		w.api(approver, "GET", "/approvals?state=pending", nil, &pending)
	}
	if len(pending) != 1 {
		t.Fatalf("no pending approval for the MCP call")
	}
	select {
	case <-done:
		t.Fatal("the ask-first call answered before a decision")
	case <-time.After(200 * time.Millisecond):
	}
	if st := w.api(approver, "POST", "/approvals/"+pending[0].ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve: %d", st)
	}
	select {
	case r := <-done:
		if r == nil || r.IsError {
			t.Fatalf("approved call over MCP: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the MCP call did not return after approval")
	}

	// Another session's token cannot use this session's endpoint.
	other := w.session(w.vault)
	client := mcp.NewClient(&mcp.Implementation{Name: "intruder", Version: "1"}, nil)
	_, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s.ID,
		HTTPClient: &http.Client{Transport: bearer{other.Token, http.DefaultTransport}}}, nil)
	if err == nil {
		t.Fatal("another session's token connected to this session's MCP endpoint")
	}
}
