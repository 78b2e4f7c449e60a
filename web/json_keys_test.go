package web_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// encoding/json matches keys case-insensitively and keeps the last, so a
// body naming one field twice in two spellings passed the repeated-key
// check and took the second, and a misspelt field was taken as the real
// one. Both are refused, naming the key; free-form values (a config, a tool
// input) keep their keys as sent.
func TestBodyKeysAreCaseSensitive(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	for _, tt := range []struct{ body, field string }{
		{`{"name": "first", "NAME": "second"}`, "NAME"},
		{`{"Name": "capitals"}`, "Name"},
	} {
		st, body := e.rawAPI(tok, "POST", "/agents", tt.body)
		var p problem
		_ = json.Unmarshal(body, &p)
		if st != 422 || p.Code != "unknown_field" || p.Field != tt.field || !strings.Contains(p.Detail, `"name"`) {
			t.Fatalf("Agent.create %s answered %d %s; want 422 unknown_field naming %s and the real name", tt.body, st, body, tt.field)
		}
	}
	var agents []struct{ Name string }
	if st := e.api(tok, "GET", "/agents", nil, &agents); st != 200 || len(agents) != 0 {
		t.Fatalf("Agent.list: %d %+v; want no agent made", st, agents)
	}
	// A config's own keys are the config parser's business, not the body's.
	st, body := e.rawAPI(tok, "POST", "/agents", `{"name": "keys"}`)
	var a struct{ ID string }
	if err := json.Unmarshal(body, &a); st != 201 || err != nil {
		t.Fatalf("Agent.create: %d %s", st, body)
	}
	st, body = e.rawAPI(tok, "POST", "/agents/"+a.ID+"/versions",
		`{"config": {"mcp_servers": [{"name": "m", "url": "https://mcp.example.com/m", "default_policy": "ask", "tool_rules": {"Lookup": "allow", "lookup": "deny"}}]}}`)
	if st != 201 {
		t.Fatalf("Version.create with tool rules differing in case: %d %s", st, body)
	}
}
