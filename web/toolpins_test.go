package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pinServer is a real MCP server (the official Go SDK over Streamable HTTP)
// whose tools a test changes while Subako runs, behind a bearer check so
// that fetching its tools needs a vault's credential.
type pinServer struct {
	srv *mcp.Server
	url string
}

const pinSecret = "pin-secret-7f3a"

type echoMessage struct {
	Message string `json:"message" jsonschema:"the text to send back"`
}

type echoText struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

func startPinServer(t *testing.T) *pinServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "pins", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes back the input"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoMessage) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get-env", Description: "Returns the environment"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "HOME=/"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+pinSecret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return &pinServer{srv: s, url: hs.URL + "/mcp"}
}

// renameParameter changes echo's input from message to text, as a server's
// new release might.
func (p *pinServer) renameParameter() {
	mcp.AddTool(p.srv, &mcp.Tool{Name: "echo", Description: "Echoes back the input"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoText) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Text}}}, nil, nil
		})
}

// addTool adds "fresh", a tool no version pinned.
func (p *pinServer) addTool() {
	mcp.AddTool(p.srv, &mcp.Tool{Name: "fresh", Description: "A tool added after publishing"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fresh!"}}}, nil, nil
		})
}

// pinDraft is a world with the pin server, a vault holding its credential,
// and an agent whose draft is w.version; b is the owner's browser.
func pinDraft(t *testing.T) (w *world, ps *pinServer, b *client) {
	t.Helper()
	e := newEnv(t)
	ps = startPinServer(t)
	b = e.owner()
	w = &world{env: e, owner: b.token(), mcpURL: ps.url}
	var v struct{ ID string }
	if s := e.api(w.owner, "POST", "/vaults", map[string]any{"name": "customer-a"}, &v); s != 201 {
		t.Fatalf("Vault.create: %d", s)
	}
	w.vault = v.ID
	if s := e.api(w.owner, "PUT", "/vaults/"+v.ID+"/credentials", map[string]any{"prefix": ps.url, "type": "bearer", "secret": pinSecret}, nil); s != 200 {
		t.Fatalf("Credential.set: %d", s)
	}
	var draft version
	w.agent, draft = e.agentWithDraft(w.owner)
	w.version = draft.ID
	return w, ps, b
}

// pinWorld is a world whose version grants the pin server as "srv", its
// tools fetched with the vault's credential and pinned at publish.
func pinWorld(t *testing.T, grantExtra string) (*world, *pinServer) {
	t.Helper()
	w, ps, _ := pinDraft(t)
	w.fetchTools(w.version, w.vault, 200)
	w.publishConfig(`{"mcp_servers":[{"name":"srv","url":"` + ps.url + `","default_policy":"allow","tool_rules":{"get-env":"deny"}` + grantExtra + `}]}`)
	return w, ps
}

func (w *world) publishConfig(cfg string) {
	w.t.Helper()
	if s, body := w.rawAPI(w.owner, "PUT", "/versions/"+w.version+"/config", cfg); s != 200 {
		w.t.Fatalf("Version.update: %d %s", s, body)
	}
	if s, body := w.rawAPI(w.owner, "POST", "/versions/"+w.version+"/publish", ""); s != 200 {
		w.t.Fatalf("publish: %d %s", s, body)
	}
}

type fetched struct {
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
		Hash        string          `json:"hash"`
	} `json:"tools"`
	Kept bool `json:"kept"`
}

func (w *world) fetchTools(version, vault string, want int) fetched {
	w.t.Helper()
	var out fetched
	if st := w.api(w.owner, "POST", "/versions/"+version+"/tools/fetch", map[string]any{"url": w.mcpURL, "vault": vault}, &out); st != want {
		w.t.Fatalf("Version.fetchTools: %d, want %d", st, want)
	}
	return out
}

// listed is what the session's MCP endpoint offers, by tool name.
func listed(t *testing.T, cs *mcp.ClientSession) map[string]string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tl := range res.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		out[tl.Name] = string(b)
	}
	return out
}

// A tool rule naming a tool the fetched list lacks is refused with the close
// name; without a fetch (or before) MCP rules are taken as they come.
func TestToolRuleTypoRefusedAgainstFetchedTools(t *testing.T) {
	w, ps, b := pinDraft(t)
	e, draft := w.env, version{ID: w.version}
	typo := `{"mcp_servers":[{"name":"srv","url":"` + ps.url + `","default_policy":"allow","tool_rules":{"get_env":"deny"}}]}`

	// Without the vault's credential the server refuses to list its tools.
	var prob struct{ Code, Field, Detail string }
	if st := e.api(w.owner, "POST", "/versions/"+draft.ID+"/tools/fetch", map[string]any{"url": ps.url}, &prob); st != 422 || prob.Code != "fetch_failed" || prob.Field != "url" {
		t.Fatalf("fetch without a credential: %d %+v", st, prob)
	}
	got := w.fetchTools(draft.ID, w.vault, 200)
	if len(got.Tools) != 2 || !got.Kept || !strings.HasPrefix(got.Tools[0].Hash, "sha256:") {
		t.Fatalf("fetched: %+v", got)
	}
	st, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", typo)
	if st != 422 || !strings.Contains(string(body), `mcp_servers[0].tool_rules.get_env`) ||
		!strings.Contains(string(body), `did you mean \"get-env\"`) || !strings.Contains(string(body), "unknown_tool") {
		t.Fatalf("typo rule through the API: %d %s", st, body)
	}
	// A new grant's form fetches with the URL typed so far and the vault chosen.
	res, page := b.do("POST", "/versions/"+draft.ID+"/fetch-tools/mcp", formValues(map[string][]string{
		"name": {""}, "url": {ps.url}, "vault": {w.vault}, "default_policy": {"allow"}}), nil)
	if res.StatusCode != 200 || !strings.Contains(page, `data-testid="fetched-tools"`) || !strings.Contains(page, "2 tools fetched") || strings.Contains(page, pinSecret) {
		t.Fatalf("Fetch tools on a new grant's form: %d %s", res.StatusCode, excerpt(page, "fetched"))
	}
	res, page = b.do("POST", "/versions/"+draft.ID+"/fetch-tools/mcp", formValues(map[string][]string{"url": {ps.url}}), nil)
	if res.StatusCode != 422 || !strings.Contains(page, "could not list its tools") {
		t.Fatalf("Fetch tools without a credential: %d %s", res.StatusCode, excerpt(page, "url-error"))
	}
	// The editor's form says the same under the tool rules.
	res, page = b.do("POST", "/versions/"+draft.ID+"/grants/mcp", formValues(map[string][]string{
		"name": {"srv"}, "url": {ps.url}, "default_policy": {"allow"}, "rule_tool": {"get_env"}, "rule_policy": {"deny"}}), nil)
	if res.StatusCode != 422 || !strings.Contains(page, "has no tool &#34;get_env&#34;") || !strings.Contains(page, "did you mean &#34;get-env&#34;?") {
		t.Fatalf("typo rule in the editor: %d %s", res.StatusCode, excerpt(page, "get_env"))
	}
	if st, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", strings.Replace(typo, "get_env", "get-env", 1)); st != 200 {
		t.Fatalf("the right name: %d %s", st, body)
	}
	if st, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config",
		strings.Replace(typo, `"default_policy"`, `"new_tools":"sometimes","default_policy"`, 1)); st != 422 || !strings.Contains(string(body), "new_tools must be deny, ask or allow") {
		t.Fatalf("a bad new_tools: %d %s", st, body)
	}
}

// After publish the server renames echo's parameter and adds a tool: the
// session offers the pinned echo and refuses a call of it with tool_changed,
// recorded; the new tool is denied (not offered) by default.
func TestPinnedToolChangedIsRefused(t *testing.T) {
	w, ps := pinWorld(t, "")
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	if schema := listed(t, cs)["mcp__srv__echo"]; !strings.Contains(schema, `"message"`) {
		t.Fatalf("echo before the change: %s", schema)
	}
	ps.renameParameter()
	ps.addTool()
	if st := w.api(w.owner, "GET", "/sessions/"+s.ID+"/tools?refresh=true", nil, nil); st != 200 {
		t.Fatalf("Session.tools refresh: %d", st)
	}
	offered := listed(t, cs)
	if schema := offered["mcp__srv__echo"]; !strings.Contains(schema, `"message"`) || strings.Contains(schema, `"text"`) {
		t.Fatalf("tools/list offers echo as %s, not as pinned", schema)
	}
	if _, ok := offered["mcp__srv__fresh"]; ok {
		t.Fatalf("a tool added after publishing is offered: %v", offered)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "mcp__srv__echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	msg := resultText(res)
	if !res.IsError || !strings.Contains(msg, "tool_changed") || !strings.Contains(msg, "mcp__srv__echo") ||
		!strings.Contains(msg, `property "message" removed`) || !strings.Contains(msg, `property "text" added`) {
		t.Fatalf("a changed tool's call answered %v %q", res.IsError, msg)
	}
	var prob struct{ Code, Detail string }
	st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__srv__echo", "input": map[string]any{"message": "hi"}}, &prob)
	if st != 409 || prob.Code != "tool_changed" || !strings.Contains(prob.Detail, "input_schema") {
		t.Fatalf("ToolCall.create of a changed tool: %d %+v", st, prob)
	}
	var c call
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__srv__fresh", "input": map[string]any{}}, &c); c.Status != "refused" {
		t.Fatalf("a new tool under new_tools deny: %d %+v", st, c)
	}
	calls := w.callsOf(s)
	refused := 0
	for _, rc := range calls {
		if rc.Status == "refused" {
			refused++
		}
	}
	if len(calls) != 3 || refused != 3 {
		t.Fatalf("recorded calls: %+v", calls)
	}
	if a, ok := w.actionFor("verdict=refused", calls[0].ID); !ok || !strings.Contains(a.Reason+" ", "tool_changed") && !strings.Contains(a.Reason, "new_tools") {
		t.Fatalf("the refusal's Action: %+v %v", a, ok)
	}
	// "What the model sees" on the version says the same.
	var vts []struct {
		Name         string
		PolicySource string `json:"policy_source"`
		Offered      bool
	}
	w.api(w.owner, "GET", "/versions/"+w.version+"/tools", nil, &vts)
	seen := map[string]string{}
	for _, vt := range vts {
		seen[vt.Name] = fmt.Sprintf("%s offered=%v", vt.PolicySource, vt.Offered)
	}
	if seen["mcp__srv__echo"] != "tool_changed offered=true" || seen["mcp__srv__fresh"] != "new_tools offered=false" {
		t.Fatalf("Version.tools: %v", seen)
	}
	// The version's drift says what changed.
	var drift []struct {
		Grant   string
		Changes []struct {
			Tool, Change string
			Fields       []string
		}
	}
	if st := w.api(w.owner, "GET", "/versions/"+w.version+"/drift", nil, &drift); st != 200 || len(drift) != 1 || len(drift[0].Changes) != 2 {
		t.Fatalf("Version.drift: %d %+v", st, drift)
	}
	if ch := drift[0].Changes[0]; ch.Tool != "echo" || ch.Change != "changed" || strings.Join(ch.Fields, ",") != "input_schema" {
		t.Fatalf("echo's drift: %+v", ch)
	}
	if ch := drift[0].Changes[1]; ch.Tool != "fresh" || ch.Change != "added" {
		t.Fatalf("fresh's drift: %+v", ch)
	}
}

// With new_tools allow, a tool the server added after publishing is offered
// and runs; ask makes it wait for an approver.
func TestNewToolsSetting(t *testing.T) {
	for _, tc := range []struct{ setting, status string }{{"allow", "succeeded"}, {"ask", "awaiting_approval"}} {
		t.Run(tc.setting, func(t *testing.T) {
			w, ps := pinWorld(t, `,"new_tools":"`+tc.setting+`"`)
			ps.addTool()
			s := w.session(w.vault)
			w.api(w.owner, "GET", "/sessions/"+s.ID+"/tools?refresh=true", nil, nil)
			if _, ok := listed(t, w.mcpSession(s))["mcp__srv__fresh"]; !ok {
				t.Fatal("new_tools " + tc.setting + " does not offer the added tool")
			}
			var c call
			zero := 0.0
			w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__srv__fresh", "input": map[string]any{}, "wait_seconds": zeroIf(tc.status != "succeeded", &zero)}, &c)
			if c.Status != tc.status {
				t.Fatalf("fresh under new_tools %s: %+v", tc.setting, c)
			}
		})
	}
}

func zeroIf(cond bool, z *float64) any {
	if cond {
		return z
	}
	return nil
}

// A version published before pinning existed (or never fetched) has no pins
// and offers what the server lists now, as before.
func TestVersionWithoutPinsOffersTheServersTools(t *testing.T) {
	w, ps, _ := pinDraft(t)
	// An unfetched grant's rules are not checked: get_env passes.
	w.publishConfig(`{"mcp_servers":[{"name":"srv","url":"` + ps.url + `","default_policy":"allow","tool_rules":{"get_env":"deny"}}]}`)
	ps.renameParameter()
	ps.addTool()
	s := w.session(w.vault)
	offered := listed(t, w.mcpSession(s))
	if !strings.Contains(offered["mcp__srv__echo"], `"text"`) || offered["mcp__srv__fresh"] == "" {
		t.Fatalf("an unpinned version offers %v", offered)
	}
}

func formValues(m map[string][]string) map[string][]string { return m }

func excerpt(page, near string) string {
	i := strings.Index(page, near)
	if i < 0 {
		if len(page) > 2000 {
			return page[:2000]
		}
		return page
	}
	return page[max(0, i-300):min(len(page), i+500)]
}

// A draft keeps the fetched lists of at most 64 server URLs: the 65th is
// refused by name, and removing grants from the config makes room.
func TestFetchedListsBounded(t *testing.T) {
	w, ps, _ := pinDraft(t)
	fetch := func(i int) (int, string) {
		var prob struct{ Code string }
		st := w.api(w.owner, "POST", "/versions/"+w.version+"/tools/fetch", map[string]any{"url": fmt.Sprintf("%s?n=%d", ps.url, i), "vault": w.vault}, &prob)
		return st, prob.Code
	}
	grants := func(n int) string {
		var gs []string
		for i := range n {
			gs = append(gs, fmt.Sprintf(`{"name":"s%d","url":"%s?n=%d","default_policy":"allow"}`, i, ps.url, i))
		}
		return `{"mcp_servers":[` + strings.Join(gs, ",") + `]}`
	}
	for i := range 64 {
		if st, code := fetch(i); st != 200 {
			t.Fatalf("fetch %d: %d %s", i, st, code)
		}
	}
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+w.version+"/config", grants(64)); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st, code := fetch(64); st != 422 || code != "too_many_fetched" {
		t.Fatalf("65th fetch with 64 granted: %d %s", st, code)
	}
	// With one grant left, the others' lists make room.
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+w.version+"/config", grants(1)); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st, code := fetch(64); st != 200 {
		t.Fatalf("65th fetch after room was made: %d %s", st, code)
	}
	var drift []struct{ Grant string }
	if w.api(w.owner, "GET", "/versions/"+w.version+"/drift", nil, &drift); len(drift) != 1 || drift[0].Grant != "s0" {
		t.Fatalf("the granted URL's list: %+v", drift)
	}
}
