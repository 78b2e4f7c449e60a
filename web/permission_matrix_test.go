package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/web"
)

// The permission matrix through the API, generated from the route table
// (web.APIVerbs): for every verb a person can hold, a token narrowed to
// exactly that verb passes the check on its route; a token narrowed to
// another verb is refused 403 with missing_permission naming the verb (and
// the noun's scope by name when the route names one); a token holding the
// verb on another vault, agent or session is refused too (a list naming no
// noun is shown filtered instead).
func TestPermissionMatrixThroughTheAPI(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	var v1, v2 struct{ ID string }
	e.api(tok, "POST", "/vaults", map[string]any{"name": "customer-a"}, &v1)
	e.api(tok, "POST", "/vaults", map[string]any{"name": "customer-b"}, &v2)
	agent, draft := e.agentWithDraft(tok)
	if s := e.api(tok, "POST", "/versions/"+draft.ID+"/publish", nil, nil); s != 200 {
		t.Fatalf("publish: %d", s)
	}
	var s1, s2 session
	e.api(tok, "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{v1.ID}}, &s1)
	e.api(tok, "POST", "/sessions", map[string]any{"version": draft.ID}, &s2)
	if v1.ID == "" || v2.ID == "" || s1.ID == "" || s2.ID == "" {
		t.Fatal("the matrix's nouns were not made")
	}

	narrowed := func(perms ...string) (string, bool) {
		var out struct{ Token string }
		var p problem
		if st := e.api(tok, "POST", "/tokens", map[string]any{"name": "matrix", "expires": "1h", "permissions": perms}, &out); st != 201 {
			e.api(tok, "POST", "/tokens", map[string]any{"name": "matrix", "expires": "1h", "permissions": perms}, &p)
			return p.Code, false
		}
		return out.Token, true
	}
	// fill puts the matrix's nouns in a route's path; wrong is the same
	// kind of scope on another noun, shown is the right scope as named.
	fill := func(path string) (string, string, string) {
		wrong, shown := "", ""
		switch {
		case strings.Contains(path, ":vault"):
			path, wrong, shown = strings.ReplaceAll(path, ":vault", v1.ID), "vault:"+v2.ID, "vault:customer-a"
		case strings.Contains(path, ":session"):
			path, wrong, shown = strings.ReplaceAll(path, ":session", s1.ID), "session:"+s2.ID, "session:"+s1.ID
		case strings.HasPrefix(path, "/agents/:agent"):
			path, wrong, shown = strings.ReplaceAll(path, ":agent", agent), "vault:"+v2.ID, "agent:support"
		case strings.HasPrefix(path, "/versions/:version"):
			path, wrong, shown = strings.ReplaceAll(path, ":version", draft.ID), "vault:"+v2.ID, "agent:support"
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == ":port" {
				path = strings.Replace(path, seg, "8080", 1)
			} else if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "x", 1)
			}
		}
		return strings.ReplaceAll(path, "*", "x"), wrong, shown
	}
	// call answers a route's status and, for an error, its problem.
	call := func(token, method, path string) (int, problem) {
		var p problem
		body := ""
		if method != http.MethodGet && method != http.MethodDelete {
			body = "{}"
		}
		st, raw := e.rawAPI(token, method, path, body)
		if st >= 400 {
			_ = json.Unmarshal(raw, &p)
		}
		return st, p
	}
	checked := 0
	for _, r := range web.APIVerbs() {
		exact, ok := narrowed(r.Verb)
		if !ok {
			continue // a verb no person holds (a session token's own)
		}
		checked++
		path, wrong, shown := fill(r.Path)
		if st, p := call(exact, r.Method, path); st == http.StatusForbidden && strings.HasPrefix(p.MissingPermission, r.Verb) {
			t.Errorf("%s %s with a token of exactly %s: refused %+v", r.Method, path, r.Verb, p)
		}
		other := "Agent.list"
		if r.Verb == other {
			other = "Skill.list"
		}
		without, _ := narrowed(other)
		st, p := call(without, r.Method, path)
		if st != http.StatusForbidden || p.Code != "permission_denied" ||
			(p.MissingPermission != r.Verb && p.MissingPermission != r.Verb+" "+shown) {
			t.Errorf("%s %s without %s: %d %+v (want missing %q or %q)", r.Method, path, r.Verb, st, p, r.Verb, r.Verb+" "+shown)
		}
		if wrong == "" {
			continue
		}
		scoped, ok := narrowed(r.Verb + " " + wrong)
		if !ok {
			t.Errorf("a token of %s %s could not be made", r.Verb, wrong)
			continue
		}
		if st, p := call(scoped, r.Method, path); st != http.StatusForbidden || !strings.HasPrefix(p.MissingPermission, r.Verb) {
			t.Errorf("%s %s with %s only on %s: %d %+v", r.Method, path, r.Verb, wrong, st, p)
		}
	}
	if checked < 60 {
		t.Fatalf("the matrix checked only %d API verbs", checked)
	}
}

// The matrix's representative verb on the MCP endpoint: a token narrowed to
// ToolCall.create (with Session.get and Session.tools) on one session calls
// its tools; without ToolCall.create, or holding it on another session, the
// call is refused naming the missing permission with the session.
func TestPermissionMatrixThroughMCP(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s1, s2 := w.session(w.vault), w.session(w.vault)
	narrowed := func(perms ...string) string {
		var out struct{ Token string }
		if st := w.api(w.owner, "POST", "/tokens", map[string]any{"name": "mcp", "expires": "1h", "permissions": perms}, &out); st != 201 {
			t.Fatalf("Token.create %v: %d", perms, st)
		}
		return out.Token
	}
	on := func(sid string, verbs ...string) []string {
		var out []string
		for _, v := range verbs {
			out = append(out, v+" session:"+sid)
		}
		return out
	}
	call := func(token string) (string, bool) {
		client := mcp.NewClient(&mcp.Implementation{Name: "matrix", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s1.ID,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			return err.Error(), false
		}
		defer cs.Close()
		res, err := cs.CallTool(t.Context(), echoParams("matrix"))
		if err != nil {
			return err.Error(), false
		}
		return resultText(res), !res.IsError
	}
	if said, ok := call(narrowed(on(s1.ID, "ToolCall.create", "Session.get", "Session.tools")...)); !ok || !strings.Contains(said, "Echo: matrix") {
		t.Fatalf("a token of exactly ToolCall.create on the session: %q", said)
	}
	if said, ok := call(narrowed(on(s1.ID, "Session.get", "Session.tools")...)); ok || !strings.Contains(said, "ToolCall.create session:"+s1.ID) {
		t.Fatalf("a token without ToolCall.create: ok=%v %q", ok, said)
	}
	if said, ok := call(narrowed(on(s2.ID, "ToolCall.create", "Session.get", "Session.tools")...)); ok || !strings.Contains(said, "session:"+s1.ID) {
		t.Fatalf("a token holding ToolCall.create on another session: ok=%v %q", ok, said)
	}
}
