package web_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wholeConfig grants the same server three times: allowed (its resources
// and prompts offered), ask-first and denied (none offered).
const wholeConfig = `{"mcp_servers": [
  {"name": "everything", "url": "MCP_URL", "default_policy": "allow"},
  {"name": "asking", "url": "MCP_URL", "default_policy": "ask"},
  {"name": "closed", "url": "MCP_URL", "default_policy": "deny"}],
  "builtins": [{"name": "session"}]}`

// directSession connects the official Go SDK client straight to the
// upstream server, as an agent without Subako would.
func (w *world) directSession() *mcp.ClientSession {
	w.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	cs, err := client.Connect(w.t.Context(), &mcp.StreamableClientTransport{Endpoint: w.mcpURL,
		HTTPClient: &http.Client{Transport: bearer{mcpToken, http.DefaultTransport}}}, nil)
	if err != nil {
		w.t.Fatalf("connect to the server directly: %v", err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

// sameJSON compares two values as their JSON reads.
func wholeSame(t *testing.T, what string, direct, through any) {
	t.Helper()
	var a, b any
	da, _ := json.Marshal(direct)
	db, _ := json.Marshal(through)
	// The server stamps some texts with the time it made them.
	da, db = clockTime.ReplaceAll(da, []byte("TIME")), clockTime.ReplaceAll(db, []byte("TIME"))
	_ = json.Unmarshal(da, &a)
	_ = json.Unmarshal(db, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s differs through Subako:\ndirect:  %s\nsubako:  %s", what, cutJSON(da), cutJSON(db))
	}
}

var clockTime = regexp.MustCompile(`\d{1,2}:\d{2}:\d{2}[\s\x{202f}\x{a0}]?[AP]M`)

func cutJSON(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func TestMCPResultsAndToolsPassedOnWhole(t *testing.T) {
	w := newWorld(t, wholeConfig)
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	direct := w.directSession()
	ctx := t.Context()

	// tools/list: title, annotations, outputSchema and _meta as the server listed them.
	dl, err := direct.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	through := map[string]*mcp.Tool{}
	for _, tl := range sl.Tools {
		through[tl.Name] = tl
	}
	withExtras := 0
	for _, d := range dl.Tools {
		got := through["mcp__everything__"+d.Name]
		if got == nil {
			// The server lists some tools only to clients declaring a
			// capability (roots, sampling) that Subako's client does not.
			if strings.HasPrefix(d.Name, "get-") && d.Name != "get-roots-list" {
				t.Errorf("tools/list lacks %s", d.Name)
			}
			continue
		}
		if d.Title != got.Title || d.Description != got.Description {
			t.Errorf("%s: title/description %q/%q, want %q/%q", d.Name, got.Title, got.Description, d.Title, d.Description)
		}
		wholeSame(t, d.Name+" annotations", d.Annotations, got.Annotations)
		wholeSame(t, d.Name+" outputSchema", d.OutputSchema, got.OutputSchema)
		wholeSame(t, d.Name+" _meta", d.Meta, got.Meta)
		wholeSame(t, d.Name+" inputSchema", d.InputSchema, got.InputSchema)
		if d.Annotations != nil && d.OutputSchema != nil {
			withExtras++
		}
		if through["mcp__closed__"+d.Name] != nil {
			t.Errorf("the denied grant offers %s", d.Name)
		}
	}
	if withExtras == 0 {
		t.Fatal("no tool of the server has both annotations and an output schema: the comparison proves nothing")
	}

	// tools/call: the same content, annotations, structuredContent and _meta.
	calls := []struct {
		tool string
		args map[string]any
		want func(*mcp.CallToolResult) bool
	}{
		{"get-tiny-image", map[string]any{}, func(r *mcp.CallToolResult) bool { return hasType[*mcp.ImageContent](r) }},
		{"get-resource-links", map[string]any{"count": 3}, func(r *mcp.CallToolResult) bool { return hasType[*mcp.ResourceLink](r) }},
		{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}, func(r *mcp.CallToolResult) bool {
			return hasType[*mcp.ImageContent](r) && r.Content[0].(*mcp.TextContent).Annotations != nil
		}},
		{"get-structured-content", map[string]any{"location": "Chicago"}, func(r *mcp.CallToolResult) bool { return r.StructuredContent != nil }},
		{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}, func(r *mcp.CallToolResult) bool {
			return hasType[*mcp.EmbeddedResource](r)
		}},
	}
	for _, c := range calls {
		d, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s directly: %v", c.tool, err)
		}
		if !c.want(d) {
			t.Fatalf("%s directly does not answer what this test compares: %+v", c.tool, d)
		}
		got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__everything__" + c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s through Subako: %v", c.tool, err)
		}
		wholeSame(t, c.tool+" result", d, got)

		// The JSON API answers the same content.
		st, jc := w.call(s.Token, s.ID, "mcp__everything__"+c.tool, c.args, 10)
		var out struct {
			Content    json.RawMessage `json:"content"`
			Structured json.RawMessage `json:"structured"`
		}
		if st != 200 || jc.Status != "succeeded" || json.Unmarshal(jc.Output, &out) != nil {
			t.Fatalf("%s on the JSON API: %d %+v", c.tool, st, jc)
		}
		wholeSame(t, c.tool+" content on the JSON API", d.Content, out.Content)
	}
}

func hasType[T mcp.Content](r *mcp.CallToolResult) bool {
	for _, c := range r.Content {
		if _, ok := c.(T); ok {
			return true
		}
	}
	return false
}

func TestMCPResourcesAndPromptsThroughTheSession(t *testing.T) {
	w := newWorld(t, wholeConfig)
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	direct := w.directSession()
	ctx := t.Context()

	init := cs.InitializeResult()
	if init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil {
		t.Fatalf("the endpoint declares no resources or prompts: %+v", init.Capabilities)
	}

	dr, err := direct.ListResources(ctx, nil)
	if err != nil || len(dr.Resources) == 0 {
		t.Fatalf("resources/list directly: %v", err)
	}
	sr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	byURI := map[string]*mcp.Resource{}
	for _, r := range sr.Resources {
		if !strings.HasPrefix(r.URI, "mcp+everything:") {
			t.Errorf("resources/list offers %s, not of the allowed grant", r.URI)
		}
		byURI[r.URI] = r
	}
	for _, r := range dr.Resources {
		got := byURI["mcp+everything:"+r.URI]
		if got == nil {
			t.Errorf("resources/list lacks %s", r.URI)
			continue
		}
		want := *r
		want.URI = got.URI
		wholeSame(t, "resource "+r.URI, &want, got)
	}

	// resources/read: the same contents, their URIs as the session names them.
	first := dr.Resources[0]
	dread, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: first.URI})
	if err != nil {
		t.Fatal(err)
	}
	sread, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcp+everything:" + first.URI})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	for _, c := range dread.Contents {
		c.URI = "mcp+everything:" + c.URI
	}
	wholeSame(t, "resources/read", dread, sread)

	// Templates, prefixed alike; one expanded and read.
	dt, err := direct.ListResourceTemplates(ctx, nil)
	if err != nil || len(dt.ResourceTemplates) == 0 {
		t.Fatalf("resources/templates/list directly: %v", err)
	}
	st, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(st.ResourceTemplates) != len(dt.ResourceTemplates) {
		t.Fatalf("resources/templates/list: %v %+v", err, st)
	}
	for i, tpl := range st.ResourceTemplates {
		if tpl.URITemplate != "mcp+everything:"+dt.ResourceTemplates[i].URITemplate {
			t.Errorf("template %s, want the server's %s behind mcp+everything:", tpl.URITemplate, dt.ResourceTemplates[i].URITemplate)
		}
	}
	dyn, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcp+everything:demo://resource/dynamic/text/7"})
	if err != nil || len(dyn.Contents) != 1 || !strings.Contains(dyn.Contents[0].Text, "7") {
		t.Fatalf("a templated resource: %v %+v", err, dyn)
	}

	// Prompts, named as tools are.
	dp, err := direct.ListPrompts(ctx, nil)
	if err != nil || len(dp.Prompts) == 0 {
		t.Fatalf("prompts/list directly: %v", err)
	}
	sp, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(sp.Prompts) != len(dp.Prompts) {
		t.Fatalf("prompts/list: %v %+v", err, sp)
	}
	for i, p := range sp.Prompts {
		want := *dp.Prompts[i]
		want.Name = "mcp__everything__" + want.Name
		wholeSame(t, "prompt "+want.Name, &want, p)
	}
	args := map[string]string{"city": "Lisbon"}
	dg, err := direct.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__everything__args-prompt", Arguments: args})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	wholeSame(t, "prompts/get", dg, sg)

	// Ask-first and denied grants offer none, and a read of theirs is the protocol's error.
	for _, uri := range []string{"mcp+closed:" + first.URI, "mcp+asking:" + first.URI, first.URI, "mcp+nosuch:" + first.URI} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != -32002 {
			t.Errorf("read %s: %v, want JSON-RPC -32002", uri, err)
		}
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__closed__simple-prompt"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, "deny") {
		t.Errorf("a denied grant's prompt: %v, want -32602 saying its policy", err)
	}

	// Each read and get is on the audit log.
	var acts []struct {
		Verb    string   `json:"verb"`
		Targets []string `json:"targets"`
		Verdict string   `json:"verdict"`
		Client  string   `json:"client_info"`
	}
	w.api(w.owner, "GET", "/actions?verb=Resource.read&limit=50", nil, &acts)
	found, refused := false, 0
	for _, a := range acts {
		if a.Verdict == "refused" {
			refused++
		}
		if a.Verdict == "allowed" && strings.Contains(strings.Join(a.Targets, " "), "mcp+everything:"+first.URI) && a.Client == "test-agent/1" {
			found = true
		}
	}
	if !found || refused != 2 {
		t.Errorf("want an allowed Resource.read Action naming %s and its client, and the ask-first and denied grants' reads refused: %+v", first.URI, acts)
	}
	w.api(w.owner, "GET", "/actions?verb=Prompt.get&limit=50", nil, &acts)
	if len(acts) < 2 {
		t.Errorf("Prompt.get Actions: %+v", acts)
	}
}
