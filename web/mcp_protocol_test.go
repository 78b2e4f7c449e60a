package web_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpClientAs connects the official Go SDK client, naming itself as the given
// client, to a session's MCP endpoint; hdr is sent on every request.
func (w *world) mcpClientAs(s session, name, version string, hdr map[string]string) *mcp.ClientSession {
	w.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, nil)
	var rt http.RoundTripper = bearer{s.Token, http.DefaultTransport}
	if len(hdr) > 0 {
		rt = headers{hdr, rt}
	}
	cs, err := client.Connect(w.t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s.ID,
		HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		w.t.Fatalf("connect to the MCP endpoint: %v", err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

// headers adds fixed headers to every request an MCP client makes.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// An unknown tool is a JSON-RPC error -32602 (invalid params) with a message
// that names the tool; bad input to a known tool stays a tool result with
// isError, naming the field.
func TestMCPUnknownToolIsInvalidParams(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	ctx := t.Context()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__no-such-tool", Arguments: map[string]any{}})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("an unknown tool answered no JSON-RPC error: err=%v result=%+v", err, res)
	}
	if rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, `no tool "mcp__everything__no-such-tool"`) {
		t.Fatalf("an unknown tool: code %d message %q, want -32602 naming the tool", rpc.Code, rpc.Message)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": 7}})
	if err != nil || !res.IsError || !strings.HasPrefix(resultText(res), "input.message: ") {
		t.Fatalf("bad input is a tool error naming the field: %v %+v", err, res)
	}
	// The connection is still good after both.
	if res, err := cs.CallTool(ctx, echoParams("still here")); err != nil || res.IsError {
		t.Fatalf("echo after the errors: %v %+v", err, res)
	}
}

// Without a token, or with a bad one, the endpoint answers 401 with a Bearer
// challenge, as an MCP client expects.
func TestMCPEndpointWithoutTokenIs401WithChallenge(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	for _, token := range []string{"", "sbk_not-a-real-token"} {
		req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/mcp/sessions/"+s.ID, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: %d, WWW-Authenticate %q; want 401 with a Bearer challenge", token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// The official client without a token cannot connect.
	client := mcp.NewClient(&mcp.Implementation{Name: "no-token", Version: "1"}, nil)
	if _, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s.ID}, nil); err == nil {
		t.Fatal("a client without a token connected")
	}
}

// OAuth discovery finds nothing (404), rather than a redirect to the sign-in
// page that sends a client such as the MCP Inspector into an OAuth flow.
func TestWellKnownOAuthMetadataIs404(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	b := w.browser() // no cookies, no redirects followed
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp/sessions/" + s.ID,
		"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/mcp/sessions/" + s.ID, "/.well-known/openid-configuration"} {
		resp, body := b.get(path)
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Location") != "" {
			t.Fatalf("GET %s: %d (Location %q), want 404", path, resp.StatusCode, resp.Header.Get("Location"))
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), "json") || !strings.Contains(body, `"status":404`) {
			t.Fatalf("GET %s: %s %s, want problem JSON", path, resp.Header.Get("Content-Type"), body)
		}
	}
}

type action struct {
	ID      string   `json:"id"`
	Verb    string   `json:"verb"`
	Targets []string `json:"targets"`
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason"`
	Model   string   `json:"model"`
	Client  string   `json:"client_info"`
}

func (w *world) actionFor(query, callID string) (action, bool) {
	w.t.Helper()
	var acts []action
	if st := w.api(w.owner, "GET", "/actions?"+query, nil, &acts); st != 200 {
		w.t.Fatalf("Action.list?%s: %d", query, st)
	}
	for _, a := range acts {
		for _, id := range a.Targets {
			if id == callID {
				return a, true
			}
		}
	}
	return action{}, false
}

type recordedCall struct {
	ID, Tool, Status, Verdict, Model string
	Client                           string `json:"client_info"`
}

func (w *world) callsOf(s session) []recordedCall {
	w.t.Helper()
	var calls []recordedCall
	if st := w.api(w.owner, "GET", "/sessions/"+s.ID+"/tool_calls", nil, &calls); st != 200 {
		w.t.Fatalf("ToolCall.list: %d", st)
	}
	return calls
}

// A call the version's policy denies is on the audit log as refused, with
// the reason and the rule that decided; Action.list's verdict filter finds it.
func TestMCPDeniedCallIsRecordedRefused(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpClientAs(s, "claude-code", "2.0.1", nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "mcp__everything__get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "refused") {
		t.Fatalf("a denied tool over MCP: %v %+v", err, res)
	}
	calls := w.callsOf(s)
	if len(calls) != 1 || calls[0].Status != "refused" {
		t.Fatalf("the denied call's record: %+v", calls)
	}
	id := calls[0].ID
	a, ok := w.actionFor("verb=ToolCall.create&verdict=refused", id)
	if !ok {
		t.Fatalf("Action.list verdict=refused does not find the denied call %s", id)
	}
	if !strings.Contains(a.Reason, "denied by the version's policy") || !strings.Contains(a.Reason, "tool rule") {
		t.Fatalf("the refused Action's reason: %q", a.Reason)
	}
	if a.Client != "claude-code/2.0.1" {
		t.Fatalf("the refused Action's client: %+v", a)
	}
	if _, ok := w.actionFor("verb=ToolCall.create&verdict=allowed", id); ok {
		t.Fatal("the denied call is also on the log as allowed")
	}
	// An allowed call is still recorded allowed.
	if res, err := cs.CallTool(t.Context(), echoParams("fine")); err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	for _, c := range w.callsOf(s) {
		if c.Tool == "mcp__everything__echo" {
			if a, ok := w.actionFor("verb=ToolCall.create&verdict=allowed", c.ID); !ok || a.Reason != "" {
				t.Fatalf("the allowed echo's Action: %v %+v", ok, a)
			}
		}
	}
	// The Audit page's refused filter shows it with its reason.
	_, page := w.browserOf().get("/audit?verdict=refused&verb=ToolCall.create")
	if !strings.Contains(page, id) || !strings.Contains(html.UnescapeString(page), "denied by the version's policy (policy source: a tool rule)") {
		t.Fatalf("the Audit page's refused filter lacks the denied call %s", id)
	}
}

// Every call records the MCP client (clientInfo from initialize) and the
// model when the client says it: a _meta key or the Subako-Model header.
func TestMCPCallRecordsClientAndModel(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	ctx := t.Context()

	byMeta := w.mcpClientAs(s, "claude-code", "2.0.1", nil)
	p := echoParams("meta")
	p.Meta = mcp.Meta{"subako/model": "claude-opus-4-5"}
	if res, err := byMeta.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("echo with _meta model: %v %+v", err, res)
	}
	byHeader := w.mcpClientAs(s, "inspector", "0.17.0", map[string]string{"Subako-Model": "gpt-5"})
	if res, err := byHeader.CallTool(ctx, echoParams("header")); err != nil || res.IsError {
		t.Fatalf("echo with the Subako-Model header: %v %+v", err, res)
	}
	silent := w.mcpClientAs(s, "quiet-agent", "", nil)
	if res, err := silent.CallTool(ctx, echoParams("no model")); err != nil || res.IsError {
		t.Fatalf("echo without a model: %v %+v", err, res)
	}
	// The JSON API takes the header too when the body names no model.
	var c call
	req := map[string]any{"tool": "mcp__everything__echo", "input": map[string]any{"message": "api"}, "wait_seconds": 10}
	if st := w.apiWithHeader(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", req, map[string]string{"Subako-Model": "local-llama"}, &c); st != 200 {
		t.Fatalf("ToolCall.create with the header: %d %+v", st, c)
	}

	want := map[string]recordedCall{ // by client
		"claude-code/2.0.1": {Model: "claude-opus-4-5"},
		"inspector/0.17.0":  {Model: "gpt-5"},
		"quiet-agent":       {Model: ""},
		// The JSON API's client is its User-Agent (issue 14, docs/api.md "Who called").
		"API (Go-http-client/1.1)": {Model: "local-llama"},
	}
	calls := w.callsOf(s)
	if len(calls) != len(want) {
		t.Fatalf("calls: %+v", calls)
	}
	for _, got := range calls {
		exp, ok := want[got.Client]
		if !ok || got.Model != exp.Model {
			t.Fatalf("call %s: client %q model %q; want one of %v", got.ID, got.Client, got.Model, want)
		}
		a, ok := w.actionFor("verb=ToolCall.create", got.ID)
		if !ok || a.Client != got.Client || a.Model != got.Model || a.Verdict != "allowed" {
			t.Fatalf("the Action of call %s: %v %+v, want client %q model %q", got.ID, ok, a, got.Client, got.Model)
		}
	}

	// People see both on the Audit page and on the session's call log.
	owner := w.browserOf()
	_, page := owner.get("/audit?verb=ToolCall.create")
	if !strings.Contains(page, "client claude-code/2.0.1") || !strings.Contains(page, "model claude-opus-4-5") ||
		!strings.Contains(page, "client inspector/0.17.0") || !strings.Contains(page, "model gpt-5") {
		t.Fatalf("the Audit page does not show clients and models:\n%s", page)
	}
	_, page = owner.get("/sessions/" + s.ID)
	if !strings.Contains(page, "via claude-code/2.0.1") || !strings.Contains(page, "claude-opus-4-5") || !strings.Contains(page, "via inspector/0.17.0") {
		t.Fatalf("the session page does not show the calls' clients and models:\n%s", page)
	}
}

// apiWithHeader is env.api with extra request headers.
func (e *env) apiWithHeader(token, method, path string, body any, hdr map[string]string, out any) int {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, e.srv.URL+"/api/v1"+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		e.t.Fatalf("%s %s: decode: %v", method, path, err)
	}
	return resp.StatusCode
}
