package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

type tokenOut struct {
	ID          string    `json:"id"`
	Token       string    `json:"token"`
	Narrowed    bool      `json:"narrowed"`
	Permissions []string  `json:"permissions"`
	Parent      string    `json:"parent"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// publishedEmpty publishes a version with no tools and returns its id.
func (e *env) publishedEmpty(tok string) string {
	e.t.Helper()
	_, v := e.agentWithDraft(tok)
	if s := e.api(tok, "POST", "/versions/"+v.ID+"/publish", nil, nil); s != 200 {
		e.t.Fatalf("Version.publish: %d", s)
	}
	return v.ID
}

func (e *env) sessionOf(tok, version string, extra map[string]any) (id, agentToken string) {
	e.t.Helper()
	body := map[string]any{"version": version}
	for k, v := range extra {
		body[k] = v
	}
	var s struct{ ID, Token string }
	if st := e.api(tok, "POST", "/sessions", body, &s); st != 201 {
		e.t.Fatalf("Session.create: %d", st)
	}
	return s.ID, s.Token
}

// A token narrowed to one session's Session.get reads that session and is
// refused anything else with the missing permission; a token it makes can
// only be narrower, and a person cannot give a token what they do not hold.
func TestNarrowedTokenActsOnlyWithinItsPermissions(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	version := e.publishedEmpty(tok)
	mine, _ := e.sessionOf(tok, version, nil)
	other, _ := e.sessionOf(tok, version, nil)

	var narrow tokenOut
	if s := e.api(tok, "POST", "/tokens", map[string]any{"name": "task", "expires": "1h",
		"permissions": []string{"Session.get session:" + mine, "Token.create"}}, &narrow); s != 201 {
		t.Fatalf("Token.create with permissions: %d", s)
	}
	if !narrow.Narrowed || strings.Join(narrow.Permissions, ",") != "Session.get session:"+mine+",Token.create *" {
		t.Fatalf("narrowed token: %+v", narrow)
	}
	if s := e.api(narrow.Token, "GET", "/sessions/"+mine, nil, nil); s != 200 {
		t.Errorf("the narrowed token reading its session: %d", s)
	}
	var p problem
	if s := e.api(narrow.Token, "GET", "/sessions/"+other, nil, &p); s != 403 || p.MissingPermission != "Session.get session:"+other {
		t.Errorf("the narrowed token reading another session: %d %+v", s, p)
	}
	p = problem{}
	if s := e.api(narrow.Token, "POST", "/agents", map[string]any{"name": "x"}, &p); s != 403 || !strings.HasPrefix(p.MissingPermission, "Agent.create") {
		t.Errorf("the narrowed token creating an agent: %d %+v", s, p)
	}

	// Widening through the narrowed token is refused, naming what it lacks.
	p = problem{}
	if s := e.api(narrow.Token, "POST", "/tokens", map[string]any{"name": "wider", "permissions": []string{"Session.get *"}}, &p); s != 422 ||
		p.Code != "permission_not_held" || !strings.Contains(p.Detail, "Session.get *") || p.Field != "permissions[0]" {
		t.Errorf("widening with the narrowed token: %d %+v", s, p)
	}
	p = problem{}
	if s := e.api(narrow.Token, "POST", "/tokens", map[string]any{"name": "all"}, &p); s != 422 || p.Code != "permissions_required" {
		t.Errorf("an unnarrowed token made with a narrowed one: %d %+v", s, p)
	}
	var narrower tokenOut
	if s := e.api(narrow.Token, "POST", "/tokens", map[string]any{"name": "narrower", "expires": "30d",
		"permissions": []string{"Session.get session:" + mine}}, &narrower); s != 201 {
		t.Fatalf("narrowing further: %d", s)
	}
	if narrower.Parent != narrow.ID || narrower.ExpiresAt.After(narrow.ExpiresAt) {
		t.Errorf("a token made by a token: parent %q, expires %v after its parent's %v", narrower.Parent, narrower.ExpiresAt, narrow.ExpiresAt)
	}

	// A member cannot give a token what a member does not hold.
	member := e.person(owner, "member@example.com", "member").token()
	p = problem{}
	if s := e.api(member, "POST", "/tokens", map[string]any{"name": "x", "permissions": []string{"Session.get *", "User.invite *"}}, &p); s != 422 ||
		p.Field != "permissions[1]" || !strings.Contains(p.Detail, "User.invite *") {
		t.Errorf("a member's token with User.invite: %d %+v", s, p)
	}
	p = problem{}
	if s := e.api(member, "POST", "/tokens", map[string]any{"name": "x", "permissions": []string{"Session.fly *"}}, &p); s != 422 || p.Field != "permissions[0]" {
		t.Errorf("an unknown verb: %d %+v", s, p)
	}

	// The list shows each token's permissions; revoking the narrowed token
	// revokes the one made with it.
	var list []tokenOut
	e.api(tok, "GET", "/tokens", nil, &list)
	shown := map[string]string{}
	for _, l := range list {
		shown[l.ID] = strings.Join(l.Permissions, ",")
	}
	if shown[narrow.ID] != "Session.get session:"+mine+",Token.create *" {
		t.Errorf("Token.list: %+v", list)
	}
	if s := e.api(tok, "DELETE", "/tokens/"+narrow.ID, nil, nil); s != 204 {
		t.Fatalf("Token.revoke: %d", s)
	}
	if s := e.api(narrower.Token, "GET", "/sessions/"+mine, nil, nil); s != 401 {
		t.Errorf("a token made with a revoked token still works: %d", s)
	}
}

// A session's agent token with token_expires stops at that time, with a
// 401 that says why, while the session stays open.
func TestSessionAgentTokenExpires(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	version := e.publishedEmpty(tok)
	var p problem
	if s := e.api(tok, "POST", "/sessions", map[string]any{"version": version, "token_expires": "soon"}, &p); s != 422 || p.Field != "token_expires" {
		t.Errorf("token_expires \"soon\": %d %+v", s, p)
	}
	id, agent := e.sessionOf(tok, version, map[string]any{"token_expires": "30m"})
	var got struct {
		TokenExpiresAt *time.Time `json:"token_expires_at"`
		State          string     `json:"state"`
	}
	if s := e.api(agent, "GET", "/sessions/"+id, nil, &got); s != 200 || got.TokenExpiresAt == nil ||
		got.TokenExpiresAt.Sub(e.clock.Now()) > 30*time.Minute || got.TokenExpiresAt.Sub(e.clock.Now()) < 29*time.Minute {
		t.Fatalf("the agent token within its 30 minutes: %d %+v", s, got)
	}
	_, page := owner.get("/sessions/" + id)
	if i := strings.Index(page, `data-testid="session-token-expires"`); i < 0 || strings.Contains(page[i:i+300], "with the session") ||
		!strings.Contains(page[i:i+300], got.TokenExpiresAt.UTC().Format("2006-01-02T15:04")) {
		t.Errorf("the session page does not show when the agent token expires")
	}
	_, page = owner.get("/sessions")
	if !strings.Contains(page, `name="token_expires"`) {
		t.Errorf("the session form has no token_expires field")
	}
	e.clock.Advance(30*time.Minute + time.Second)
	p = problem{}
	if s := e.api(agent, "GET", "/sessions/"+id, nil, &p); s != 401 || p.Code != "token_expired" || !strings.Contains(p.Detail, "token_expires") {
		t.Errorf("the agent token past token_expires: %d %+v", s, p)
	}
	// The MCP endpoint says the same.
	req, _ := http.NewRequest("POST", e.srv.URL+"/mcp/sessions/"+id, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(body), "token_expires") {
		t.Errorf("the MCP endpoint with the expired agent token: %d %s", resp.StatusCode, body)
	}
	if s := e.api(tok, "GET", "/sessions/"+id, nil, &got); s != 200 || got.State != "active" {
		t.Errorf("the session after its agent token expired: %d %+v", s, got)
	}
}
