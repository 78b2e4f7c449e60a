package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
)

// NUL and broken UTF-8 anywhere a request carries text (a JSON body, an
// agent config, a path or query parameter, a form field) are a 422 naming
// the field, on SQLite and PostgreSQL alike, and nothing is stored. So are
// a body with trailing data and one giving a key twice.
func TestBrokenTextRefusedNamingTheField(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	_, v := e.agentWithDraft(tok)
	cases := []struct {
		name, method, path, body string
		code, field              string
	}{
		{"NUL in a body field", "POST", "/agents", `{"name":"a\u0000b"}`, "invalid_text", "name"},
		{"invalid UTF-8 in a body field", "POST", "/agents", "{\"name\":\"caf\xe9\"}", "invalid_text", "name"},
		{"lone surrogate in a body field", "POST", "/agents", `{"name":"x\udc00"}`, "invalid_text", "name"},
		{"NUL in a nested field", "POST", "/agents", `{"name":"ok","description":"fine"}`, "", ""},
		{"NUL in a key", "POST", "/agents", `{"name":"ok","a\u0000":1}`, "invalid_text", `["a\x00"]`},
		{"trailing JSON", "POST", "/agents", `{"name":"a"}{"name":"b"}`, "trailing_data", ""},
		{"duplicate key", "POST", "/agents", `{"name":"a","name":"b"}`, "duplicate_key", "name"},
		{"NUL in a path parameter", "GET", "/agents/agt%00x", "", "invalid_text", "agent"},
		{"invalid UTF-8 in a path parameter", "DELETE", "/agents/agt%ff", "", "invalid_text", "agent"},
		{"NUL in a query parameter", "GET", "/actions?verb=Agent.create%00", "", "invalid_text", "verb"},
		{"NUL in an agent config", "PUT", "/versions/" + v.ID + "/config",
			`{"mcp_servers":[{"name":"a","url":"https://mcp.example.com/\u0000","default_policy":"ask"}]}`, "invalid_text", "mcp_servers[0].url"},
		{"invalid UTF-8 in an agent config", "PUT", "/versions/" + v.ID + "/config",
			"{\"mcp_servers\":[{\"name\":\"a\",\"url\":\"https://mcp.example.com/\xff\",\"default_policy\":\"ask\"}]}", "invalid_text", "mcp_servers[0].url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := e.rawAPI(tok, c.method, c.path, c.body)
			if c.code == "" {
				if status >= 300 {
					t.Fatalf("answered %d: %s", status, body)
				}
				return
			}
			var p problem
			_ = json.Unmarshal(body, &p)
			if status != 422 || p.Code != c.code || p.Field != c.field {
				t.Fatalf("answered %d %+v; want 422 %s naming %q", status, p, c.code, c.field)
			}
		})
	}
	var agents []struct{ Name string }
	e.api(tok, "GET", "/agents", nil, &agents)
	if len(agents) != 2 { // "support" from agentWithDraft, "ok" from the good case
		t.Fatalf("refused bodies left agents behind: %+v", agents)
	}
	var got version
	e.api(tok, "GET", "/versions/"+v.ID, nil, &got)
	if !sameJSON(t, got.Config, v.Config) {
		t.Fatalf("a refused config changed the draft: %s", got.Config)
	}

	// The console's forms answer the same way.
	resp, page := owner.post("/agents", url.Values{"name": {"a\x00b"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "NUL") {
		t.Fatalf("a console form with a NUL answered %d", resp.StatusCode)
	}
}

// An Action is never lost to the text it records: a verb reached with a
// NUL (by a caller other than the HTTP API, which refuses it first) is on
// the audit log on PostgreSQL too, which refuses NUL in text.
func TestActionKeptWhateverItsText(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	var me []struct {
		ID    string `json:"id"`
		Email string `json:"email"`
	}
	e.api(tok, "GET", "/users", nil, &me)
	p := runtime.UserPrincipal(me[0].ID, me[0].Email, runtime.AccessOwner)
	_, _ = e.rt.AgentGet(t.Context(), p, "agt_\x00\xff")
	var acts []runtime.ActionView
	e.api(tok, "GET", "/actions?verb=Agent.get", nil, &acts)
	if len(acts) != 1 || !strings.Contains(strings.Join(acts[0].Targets, " "), "agt_") {
		t.Fatalf("the Action of a verb given a NUL is lost: %+v", acts)
	}
}
