package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peopleMCP connects the official Go SDK client to people's /mcp with token.
func (e *env) peopleMCP(token string) *mcp.ClientSession {
	e.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "review", Version: "1"}, nil)
	cs, err := client.Connect(e.t.Context(), &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		e.t.Fatalf("connect to /mcp: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// A program's text is kept with its Action and shown on the Audit page, so a
// secret typed into it must not be: a program calling Credential.set is
// refused before its text is kept, and one that reaches it another way has
// the secret its refused call took removed from the kept text.
func TestCodeModeProgramSecretIsNeverKept(t *testing.T) {
	w := newWorld(t, everythingConfig)
	cs := w.peopleMCP(w.owner)
	do := func(prog string) (bool, string) {
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "do", Arguments: map[string]any{"program": prog}})
		if err != nil {
			t.Fatalf("do: %v", err)
		}
		return r.IsError, resultText(r)
	}
	for _, prog := range []string{
		`await $.Credential.set({ vault: "` + w.vault + `", prefix: "https://x.example", type: "bearer", secret: "sk-live-SECRET42" })`,
		`await ($ as any)["Credential"]["set"]({ vault: "` + w.vault + `", prefix: "https://x.example", type: "bearer", secret: "sk-live-SECRET42" })`,
	} {
		if isErr, text := do(prog); !isErr || !strings.Contains(text, "Credential.set") {
			t.Errorf("a program calling Credential.set: %s", text)
		}
	}
	isErr, text := do(`const noun = "Cred" + "ential"
try { await ($ as any)[noun].set({ vault: "` + w.vault + `", prefix: "https://y.example", type: "bearer", secret: "sk-live-OTHER77" }) }
catch (e: any) { return e.code }`)
	if isErr || !strings.Contains(text, "not_in_code_mode") {
		t.Errorf("Credential.set reached by a computed name: %s", text)
	}
	var kept []string
	if err := w.rt.DB().Raw("SELECT program FROM actions WHERE program LIKE ? OR program LIKE ?", "%SECRET42%", "%OTHER77%").Scan(&kept).Error; err != nil {
		t.Fatal(err)
	}
	if len(kept) != 0 {
		t.Errorf("programs kept with the secret they passed: %q", kept)
	}
	var removed int64
	w.rt.DB().Raw("SELECT count(*) FROM actions WHERE verb = 'Program.run' AND program LIKE ?", "%[secret removed]%").Scan(&removed)
	if removed != 1 {
		t.Errorf("%d programs kept with their secret removed; want the computed-name one", removed)
	}
	var creds []struct{ Prefix string }
	w.api(w.owner, "GET", "/vaults/"+w.vault+"/credentials", nil, &creds)
	for _, c := range creds {
		if strings.Contains(c.Prefix, ".example") {
			t.Errorf("a program set a credential: %+v", c)
		}
	}
}

// A program's model (MCP _meta "subako/model") is bounded as the API's
// X-Subako-Model is: over 200 bytes or not text, the program is refused
// naming model and the limit, and none of its calls runs.
func TestCodeModeProgramModelIsBounded(t *testing.T) {
	w := newWorld(t, codeConfig)
	people := w.peopleMCP(w.owner)
	agent := w.mcpSession(w.session(w.vault))
	for _, c := range []struct {
		cs      *mcp.ClientSession
		model   string
		program string
	}{
		{people, strings.Repeat("m", 300), `return (await $.Agent.list({})).length`},
		{people, "evil\nmodel", `return (await $.Agent.list({})).length`},
		{agent, strings.Repeat("m", 300), `return await $.mcp.everything.echo({ message: "x" })`},
	} {
		r, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "do", Meta: mcp.Meta{"subako/model": c.model},
			Arguments: map[string]any{"program": c.program}})
		if err != nil {
			t.Fatalf("do: %v", err)
		}
		if text := resultText(r); !r.IsError || !strings.Contains(text, "model") || !(strings.Contains(text, "200 bytes") || strings.Contains(text, "control characters")) {
			t.Errorf("a program with the model %.20q… answered %s", c.model, text)
		}
	}
	var ran int64
	w.rt.DB().Raw("SELECT count(*) FROM actions WHERE verb IN ('Agent.list', 'ToolCall.create') AND parent_id <> ''").Scan(&ran)
	if ran != 0 {
		t.Errorf("%d calls ran inside refused programs", ran)
	}
}

// search's query limit counts characters, as its error and schema say: 150
// accented letters are in bounds, 201 are not.
func TestCodeModeSearchQueryLimitCountsCharacters(t *testing.T) {
	e := newEnv(t)
	cs := e.peopleMCP(e.owner().token())
	for _, c := range []struct {
		query string
		err   bool
	}{{strings.Repeat("é", 150), false}, {strings.Repeat("é", 201), true}} {
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": c.query}})
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		if r.IsError != c.err || (c.err && !strings.Contains(resultText(r), "201 characters; the limit is 200")) {
			t.Errorf("search of %d characters: %s", len([]rune(c.query)), resultText(r))
		}
	}
}
