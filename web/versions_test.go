package web_test

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// rawAPI sends a raw body and returns the status and the body.
func (e *env) rawAPI(token, method, path, body string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+"/api/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type version struct {
	ID     string          `json:"id"`
	Number int             `json:"number"`
	State  string          `json:"state"`
	Config json.RawMessage `json:"config"`
}

func (e *env) agentWithDraft(tok string) (agent string, v version) {
	e.t.Helper()
	var a struct{ ID string }
	if s := e.api(tok, "POST", "/agents", map[string]any{"name": "support"}, &a); s != 201 {
		e.t.Fatalf("Agent.create: %d", s)
	}
	if s := e.api(tok, "POST", "/agents/"+a.ID+"/versions", map[string]any{}, &v); s != 201 {
		e.t.Fatalf("Version.create: %d", s)
	}
	return a.ID, v
}

const seedSandbox = `{
  "sandboxes": [
    {
      "name": "workbench",
      "environment": { "type": "platform", "release": "2026" },
      "network": { "type": "unrestricted" },
      "default_policy": "allow"
    }
  ]
}`

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

func TestSeedSandboxConfigImportsUnchanged(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	_, v := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", seedSandbox); s != 200 {
		t.Fatalf("import of the seed's sandbox JSON: %d %s", s, body)
	}
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !sameJSON(t, got.Config, []byte(seedSandbox)) {
		t.Fatalf("the seed's JSON came back as %s", got.Config)
	}
	var ts []struct {
		Name, Policy string
		Offered      bool
	}
	e.api(tok, "GET", "/versions/"+v.ID+"/tools", nil, &ts)
	if len(ts) != 1 || ts[0].Name != "sandbox__workbench__exec" || ts[0].Policy != "allow" || !ts[0].Offered {
		t.Fatalf("Version.tools: %+v", ts)
	}
}

func TestConfigRejectionsNameTheField(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	_, v := e.agentWithDraft(tok)
	cases := []struct{ name, config, field, code string }{
		{"bad name", `{"sandboxes":[{"name":"Work_Bench","environment":{"type":"platform","release":"2026"},"network":{"type":"none"},"default_policy":"allow"}]}`, "sandboxes[0].name", "name_invalid"},
		{"parent", `{"mcp_servers":[{"name":"parent","url":"https://mcp.example.com","default_policy":"ask"}]}`, "mcp_servers[0].name", "name_reserved"},
		{"unknown field", `{"sandboxes":[{"name":"a","environment":{"type":"platform","release":"2026"},"network":{"type":"none"},"default_policy":"allow","colour":"red"}]}`, "sandboxes[0].colour", "unknown_field"},
		{"authorization header", `{"mcp_servers":[{"name":"a","url":"https://mcp.example.com","default_policy":"ask","headers":{"Authorization":"Bearer x"}}]}`, "mcp_servers[0].headers", "credential_in_config"},
		{"token in url", `{"mcp_servers":[{"name":"a","url":"https://mcp.example.com/?token=abc","default_policy":"ask"}]}`, "mcp_servers[0].url", "credential_in_config"},
		{"unknown skill", `{"skills":[{"name":"a","skill":"nope"}]}`, "skills[0].skill", "unknown_skill"},
		{"policy on builtin", `{"builtins":[{"name":"ask_user","default_policy":"allow"}]}`, "builtins[0].default_policy", "policy_not_allowed"},
		{"unknown release", `{"sandboxes":[{"name":"a","environment":{"type":"platform","release":"1999"},"network":{"type":"none"},"default_policy":"allow"}]}`, "sandboxes[0].environment.release", "unknown_release"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", c.config)
			var p problem
			_ = json.Unmarshal(body, &p)
			if s != 422 || p.Field != c.field || p.Code != c.code {
				t.Fatalf("%d %s; want 422 %s %s", s, body, c.field, c.code)
			}
			if c.code == "credential_in_config" && !strings.Contains(p.Detail, "vault") {
				t.Errorf("the message does not say credentials belong in a vault: %s", p.Detail)
			}
			if strings.Contains(string(body), "Bearer x") || strings.Contains(string(body), "abc") {
				t.Errorf("the error repeats the credential: %s", body)
			}
		})
	}
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !sameJSON(t, got.Config, []byte(`{}`)) {
		t.Fatalf("rejected imports changed the draft: %s", got.Config)
	}
}

func TestPublishedVersionIsImmutableAndNewDraftIndependent(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	agent, v := e.agentWithDraft(tok)
	e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", seedSandbox)
	if s := e.api(tok, "POST", "/versions/"+v.ID+"/publish", nil, nil); s != 200 {
		t.Fatalf("publish: %d", s)
	}
	var p problem
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", `{}`); s != 409 || !strings.Contains(string(body), "version_published") {
		t.Fatalf("update of a published version: %d %s", s, body)
	}
	if s := e.api(tok, "POST", "/versions/"+v.ID+"/publish", nil, &p); s != 409 || p.Code != "version_published" {
		t.Fatalf("publishing again: %d %+v", s, p)
	}
	var draft version
	if s := e.api(tok, "POST", "/agents/"+agent+"/versions", map[string]any{"from": v.ID}, &draft); s != 201 || draft.Number != 2 || draft.State != "draft" {
		t.Fatalf("new draft from the published version: %d %+v", s, draft)
	}
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+draft.ID+"/config", `{"builtins":[{"name":"session"}]}`); s != 200 {
		t.Fatalf("editing the new draft: %d %s", s, body)
	}
	var orig version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &orig)
	if !sameJSON(t, orig.Config, []byte(seedSandbox)) || orig.State != "published" {
		t.Fatalf("the published version changed: %+v", orig)
	}
	var changes []struct{ Kind, Name, Op string }
	e.api(tok, "GET", "/versions/"+draft.ID+"/diff?against="+v.ID, nil, &changes)
	if len(changes) != 2 || changes[0].Op != "removed" || changes[0].Name != "workbench" || changes[1].Op != "added" || changes[1].Name != "session" {
		t.Fatalf("diff: %+v", changes)
	}
}

func TestAgentConfigRoundTripEveryKind(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	_, v := e.agentWithDraft(tok)
	e.installTestFunction()
	e.api(tok, "POST", "/skills", map[string]any{"name": "refund-policy", "files": []map[string]any{{"path": "README.md", "content": "refunds"}}}, nil)
	config, err := os.ReadFile("testdata/every-kind.json")
	if err != nil {
		t.Fatal(err)
	}
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", string(config)); s != 200 {
		t.Fatalf("import: %d %s", s, body)
	}
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !sameJSON(t, got.Config, config) {
		t.Fatalf("export differs from the import:\n%s\nvs\n%s", got.Config, config)
	}
	// Re-importing the export gives the same config again.
	if s, _ := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", string(got.Config)); s != 200 {
		t.Fatal("re-import of the export failed")
	}
	var again version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &again)
	if !bytes.Equal(again.Config, got.Config) {
		t.Fatal("export → import → export is not stable")
	}
}

// The grant form keeps every tool-rule row: a tool given twice is refused
// under the rules, as the API refuses it, and nothing is saved; a published
// version offers no form at all.
func TestGrantFormRefusesDuplicateRulesAndPublishedVersions(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	_, v := e.agentWithDraft(tok)
	form := url.Values{"name": {"box"}, "release": {"2026"}, "network": {"none"}, "default_policy": {"allow"},
		"rule_tool": {"exec", "exec"}, "rule_policy": {"deny", "allow"}}
	resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form)
	if msg := html.UnescapeString(fieldText(page, "tool_rules-error")); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, `"exec"`) || !strings.Contains(msg, "twice") {
		t.Fatalf("two rules for exec answered %d with %q", resp.StatusCode, msg)
	}
	var got version
	if e.api(tok, "GET", "/versions/"+v.ID, nil, &got); !sameJSON(t, got.Config, []byte(`{}`)) {
		t.Fatalf("a refused form changed the config: %s", got.Config)
	}
	form["rule_tool"], form["rule_policy"] = []string{"exec"}, []string{"deny"}
	if resp, _ := owner.post("/versions/"+v.ID+"/grants/sandbox", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("one rule for exec answered %d", resp.StatusCode)
	}
	if s := e.api(tok, "POST", "/versions/"+v.ID+"/publish", nil, nil); s != 200 {
		t.Fatalf("publish: %d", s)
	}
	for _, path := range []string{"/grants/sandbox/new", "/grants/sandbox/box/edit"} {
		resp, _ := owner.get("/versions/" + v.ID + path)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/versions/"+v.ID {
			t.Fatalf("%s of a published version answered %d to %q", path, resp.StatusCode, resp.Header.Get("Location"))
		}
		if _, editor := owner.get("/versions/" + v.ID); !strings.Contains(editor, "is published and cannot change") {
			t.Fatalf("the editor does not say why the form is not offered")
		}
	}
}

// A missing or null config is refused, naming the field, and the draft keeps
// its grants; {} is how an empty config is said.
func TestVersionUpdateNeedsAConfig(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	_, v := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", seedSandbox); s != 200 {
		t.Fatalf("update: %d %s", s, body)
	}
	for _, body := range []string{"", "  ", "null"} {
		s, out := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", body)
		var p problem
		json.Unmarshal(out, &p)
		if s != 422 || p.Field != "config" || !strings.Contains(p.Detail, "{}") {
			t.Fatalf("a config of %q answered %d %s", body, s, out)
		}
	}
	var got version
	if e.api(tok, "GET", "/versions/"+v.ID, nil, &got); !sameJSON(t, got.Config, []byte(seedSandbox)) {
		t.Fatalf("a refused update changed the draft: %s", got.Config)
	}
	if s, _ := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", `{}`); s != 200 {
		t.Fatalf("an explicit empty config answered %d", s)
	}
}
