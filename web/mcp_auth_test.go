package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpAs connects the official Go SDK client to a session's MCP endpoint with
// any bearer token: a person's or the session's own.
func (w *world) mcpAs(token, sessionID string) *mcp.ClientSession {
	w.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := client.Connect(w.t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + sessionID,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		w.t.Fatalf("connect to the MCP endpoint: %v", err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

func (w *world) userID(email string) string {
	w.t.Helper()
	var users []struct{ ID, Email string }
	if st := w.api(w.owner, "GET", "/users", nil, &users); st != 200 {
		w.t.Fatalf("User.list: %d", st)
	}
	for _, u := range users {
		if u.Email == email {
			return u.ID
		}
	}
	w.t.Fatalf("no user %s in %v", email, users)
	return ""
}

func echoParams(msg string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": msg}}
}

// A person demoted while their MCP connection stays open loses the verbs at
// once: each message acts as the token of its own request, not as whoever
// opened the connection.
func TestMCPDemotedMemberIsRefusedOnAnOpenConnection(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	member := w.person(w.browserOf(), "member@example.com", "member").token()
	cs := w.mcpAs(member, s.ID)
	ctx := t.Context()

	res, err := cs.CallTool(ctx, echoParams("as a member"))
	if err != nil || res.IsError || !strings.Contains(resultText(res), "Echo: as a member") {
		t.Fatalf("a member's echo over MCP: %v %+v", err, res)
	}
	if st := w.api(w.owner, "PATCH", "/users/"+w.userID("member@example.com"), map[string]any{"access": "viewer"}, nil); st != 200 {
		t.Fatalf("demoting the member: %d", st)
	}
	res, err = cs.CallTool(ctx, echoParams("as a viewer"))
	var said string
	if err != nil {
		said = err.Error()
	} else {
		said = resultText(res)
	}
	if (err == nil && !res.IsError) || !strings.Contains(said, "ToolCall.create") {
		t.Fatalf("a viewer's call on the connection opened as a member: err=%v result=%q", err, said)
	}
	// Reading is still a viewer's right, over the same connection.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("a viewer's tools/list: %v", err)
	}
}

// An MCP session id is bound to the principal that opened it: another one who
// may reach the Subako session cannot act through it.
func TestMCPSessionIDRefusesAnotherPrincipal(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpAs(s.Token, s.ID)

	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp__everything__echo","arguments":{"message":"hijacked"}}}`
	req, _ := http.NewRequest("POST", w.srv.URL+"/mcp/sessions/"+s.ID, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+w.owner)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(got), "hijacked") {
		t.Fatalf("the owner's token on the agent's MCP session id: %d %s", resp.StatusCode, got)
	}
	// The opener's connection is untouched.
	res, err := cs.CallTool(t.Context(), echoParams("still mine"))
	if err != nil || res.IsError || !strings.Contains(resultText(res), "Echo: still mine") {
		t.Fatalf("the agent's own echo after the attempt: %v %+v", err, res)
	}
}
