package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestViewerAgentCreateIsRefusedAndAudited(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	viewer := e.person(owner, "viewer@example.com", "viewer")
	vtok := viewer.token()

	var p problem
	status := e.api(vtok, "POST", "/agents", map[string]any{"name": "nope"}, &p)
	if status != http.StatusForbidden || p.Code != "permission_denied" || p.MissingPermission != "Agent.create" {
		t.Fatalf("viewer Agent.create: %d %+v", status, p)
	}
	// In the console too, and the page says which permission is missing (the
	// viewer is not offered the form, so the message cannot sit beside it).
	if resp, page := viewer.post("/agents", url.Values{"name": {"nope"}}); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "Agent.create") {
		t.Fatalf("viewer's console Agent.create answered %d:\n%s", resp.StatusCode, page)
	}
	var acts []struct {
		Verb, By, Verdict, Reason string
	}
	e.api(owner.token(), "GET", "/actions?verb=Agent.create&verdict=refused", nil, &acts)
	if len(acts) != 2 {
		t.Fatalf("Action.list shows %d refusals, want 2: %+v", len(acts), acts)
	}
	for _, a := range acts {
		if a.By != "viewer@example.com" || a.Reason != "missing permission Agent.create" {
			t.Errorf("refusal recorded as %+v", a)
		}
	}
	_, page := owner.get("/audit?verdict=refused&by=viewer@example.com")
	if !strings.Contains(page, "Agent.create") || !strings.Contains(page, "missing permission Agent.create") {
		t.Fatal("the Audit page does not show the viewer's refusal")
	}
	// The viewer may still read.
	if status := e.api(vtok, "GET", "/agents", nil, nil); status != 200 {
		t.Fatalf("viewer Agent.list answered %d", status)
	}
}

func TestRemovingPersonEndsAccessAtOnce(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	member := e.person(owner, "member@example.com", "member")
	mtok := member.token()
	if resp, _ := member.get("/agents"); resp.StatusCode != 200 {
		t.Fatalf("member cannot see agents: %d", resp.StatusCode)
	}
	var users []struct{ ID, Email string }
	e.api(owner.token(), "GET", "/users", nil, &users)
	var id string
	for _, u := range users {
		if u.Email == "member@example.com" {
			id = u.ID
		}
	}
	if resp, _ := owner.post("/people/"+id+"/remove", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove answered %d", resp.StatusCode)
	}
	if resp, _ := member.get("/agents"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("the removed person's browser still got %d", resp.StatusCode)
	}
	if status := e.api(mtok, "GET", "/agents", nil, nil); status != http.StatusUnauthorized {
		t.Fatalf("the removed person's token answered %d", status)
	}
}

func TestExpiredAndRevokedTokensAreRefused(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token() // 1h
	if status := e.api(tok, "GET", "/agents", nil, nil); status != 200 {
		t.Fatalf("fresh token answered %d", status)
	}
	e.clock.Advance(61 * time.Minute)
	var p problem
	if status := e.api(tok, "GET", "/agents", nil, &p); status != http.StatusUnauthorized || p.Code != "token_expired" {
		t.Fatalf("expired token: %d %+v", status, p)
	}
	var created struct{ ID, Token string }
	if status := e.api(owner.token(), "POST", "/tokens", map[string]any{"name": "x", "expires": "30d"}, &created); status != 201 {
		t.Fatalf("Token.create answered %d", status)
	}
	if status := e.api(created.Token, "DELETE", "/tokens/"+created.ID, nil, nil); status != http.StatusNoContent {
		t.Fatalf("Token.revoke answered %d", status)
	}
	if status := e.api(created.Token, "GET", "/agents", nil, nil); status != http.StatusUnauthorized {
		t.Fatalf("revoked token answered %d", status)
	}
	if status := e.api("", "GET", "/agents", nil, &p); status != http.StatusUnauthorized || p.Code != "unauthenticated" {
		t.Fatalf("no token: %d %+v", status, p)
	}
	for _, bad := range []string{"0h", "400d", "soon"} {
		if status := e.api(owner.token(), "POST", "/tokens", map[string]any{"expires": bad}, &p); status != 422 || p.Field != "expires" {
			t.Errorf("expires %q: %d %+v", bad, status, p)
		}
	}
}

func TestOwnersAreProtected(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	otok := owner.token()
	admin := e.person(owner, "admin@example.com", "admin")
	atok := admin.token()
	var users []struct{ ID, Email, Access string }
	e.api(otok, "GET", "/users", nil, &users)
	ownerID := users[0].ID

	var p problem
	if status := e.api(otok, "DELETE", "/users/"+ownerID, nil, &p); status != http.StatusConflict || p.Code != "last_owner" {
		t.Fatalf("removing the last owner: %d %+v", status, p)
	}
	if status := e.api(otok, "PATCH", "/users/"+ownerID, map[string]any{"access": "admin"}, &p); status != http.StatusConflict || p.Code != "last_owner" {
		t.Fatalf("demoting the last owner: %d %+v", status, p)
	}
	if status := e.api(atok, "DELETE", "/users/"+ownerID, nil, &p); status != http.StatusForbidden || p.MissingPermission != "User.grant_owner" {
		t.Fatalf("an admin removing the owner: %d %+v", status, p)
	}
	if status := e.api(atok, "POST", "/users", map[string]any{"email": "x@example.com", "access": "owner"}, &p); status != http.StatusForbidden {
		t.Fatalf("an admin inviting an owner: %d %+v", status, p)
	}
	var adminID string
	for _, u := range users {
		if u.Email == "admin@example.com" {
			adminID = u.ID
		}
	}
	if status := e.api(otok, "PATCH", "/users/"+adminID, map[string]any{"access": "owner"}, nil); status != 200 {
		t.Fatalf("promoting a second owner: %d", status)
	}
	// With two owners, one may step down.
	if status := e.api(otok, "PATCH", "/users/"+ownerID, map[string]any{"access": "member"}, &p); status != 200 {
		t.Fatalf("an owner stepping down beside another: %d %+v", status, p)
	}
	if status := e.api(otok, "PATCH", "/users/"+adminID, map[string]any{"access": "root"}, &p); status != 403 && (status != 422 || p.Field != "access") {
		t.Fatalf("an unknown access level: %d %+v", status, p)
	}
}

func TestAPIErrorsAreProblems(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
	}{
		{"unknown field", "POST", "/agents", map[string]any{"name": "a", "colour": "red"}, 422, "unknown_field", "colour"},
		{"wrong type", "POST", "/agents", map[string]any{"name": 7}, 422, "invalid_type", "name"},
		{"missing name", "POST", "/agents", map[string]any{}, 422, "name_required", "name"},
		{"long name", "POST", "/agents", map[string]any{"name": strings.Repeat("a", 65)}, 422, "name_too_long", "name"},
		{"unknown agent", "GET", "/agents/ag_nope", nil, 404, "not_found", ""},
		{"bad email", "POST", "/users", map[string]any{"email": "not-an-email", "access": "member"}, 422, "invalid_email", "email"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p problem
			status := e.api(tok, c.method, c.path, c.body, &p)
			if status != c.status || p.Code != c.code || p.Field != c.field || p.Status != c.status || p.Detail == "" {
				t.Fatalf("%d %+v; want %d %s %s", status, p, c.status, c.code, c.field)
			}
		})
	}
	var agents []any
	e.api(tok, "GET", "/agents", nil, &agents)
	if len(agents) != 0 {
		t.Fatalf("bad input left %d agents behind", len(agents))
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		if resp, body := b.get(path); resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q", path, resp.StatusCode, body)
		}
	}
	// HEAD answers as GET does, without a body: what uptime checks send.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/login": 200, "/agents": http.StatusSeeOther} {
		resp, body := b.do(http.MethodHead, path, nil, nil)
		if resp.StatusCode != want || body != "" {
			t.Errorf("HEAD %s: %d with %d bytes, want %d and none", path, resp.StatusCode, len(body), want)
		}
		// The same connection serves the next request: nothing of a body was left on it.
		if resp, body := b.get("/healthz"); resp.StatusCode != 200 || !strings.Contains(body, "ok") {
			t.Errorf("GET after HEAD %s: %d %q", path, resp.StatusCode, body)
		}
	}
	// Not on what streams or acts: an event stream would never end, and an
	// API GET may claim or record something.
	signedIn := e.owner()
	bearer := map[string]string{"Authorization": "Bearer " + signedIn.token()}
	for _, path := range []string{"/approvals/events", "/sandboxes/events", "/api/v1/agents"} {
		if resp, _ := signedIn.do(http.MethodHead, path, nil, bearer); resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD %s answered %d, want it not served (405 or 404)", path, resp.StatusCode)
		}
	}
	b.get("/login")
	if _, body := b.do(http.MethodGet, "/metrics", nil, bearer); !strings.Contains(body, `subako_http_requests_total{method="GET",route="/login",status="200"}`) {
		t.Errorf("metrics do not count requests by route:\n%.2000s", body)
	}
	resp, _ := b.get("/login")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
}

// An admin may revoke a member's token but not an owner's: owners are only
// touched by owners, as for changing or removing them.
func TestOnlyOwnersRevokeAnOwnersToken(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	admin := e.person(owner, "admin@example.com", "admin")
	member := e.person(owner, "member@example.com", "member")
	adminTok := admin.token()
	var ownerTok, memberTok struct{ ID, Token string }
	e.api(owner.token(), "POST", "/tokens", map[string]any{"name": "ci", "expires": "30d"}, &ownerTok)
	e.api(member.token(), "POST", "/tokens", map[string]any{"name": "ci", "expires": "30d"}, &memberTok)
	var p problem
	if s := e.api(adminTok, "DELETE", "/tokens/"+ownerTok.ID, nil, &p); s != http.StatusForbidden || p.MissingPermission != "User.grant_owner" {
		t.Fatalf("an admin revoking an owner's token answered %d %+v", s, p)
	}
	if s := e.api(ownerTok.Token, "GET", "/agents", nil, nil); s != http.StatusOK {
		t.Fatalf("the owner's token stopped working after a refused revoke: %d", s)
	}
	if s := e.api(adminTok, "DELETE", "/tokens/"+memberTok.ID, nil, nil); s != http.StatusNoContent {
		t.Fatalf("an admin revoking a member's token answered %d", s)
	}
	if s := e.api(memberTok.Token, "GET", "/agents", nil, nil); s != http.StatusUnauthorized {
		t.Fatalf("a revoked token still answers %d", s)
	}
}

// Inviting the same email again ends the earlier link: one live link per
// person, so a link sent by mistake (or at the wrong level) stops working.
func TestReinvitingEndsTheEarlierLink(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	link := func(access string) string {
		_, page := owner.submit("/people/invite", url.Values{"email": {"new@example.com"}, "access": {access}})
		m := inviteLink.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no invitation link on the People page:\n%s", page)
		}
		return m[1]
	}
	first, second := link("admin"), link("viewer")
	if resp, _ := e.browser().get("/invite/" + first); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the earlier link still answers %d", resp.StatusCode)
	}
	if resp, _ := e.browser().post("/invite/"+second, url.Values{"password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the newest link answered %d", resp.StatusCode)
	}
	var people []struct{ Email, Access string }
	e.api(owner.token(), "GET", "/users", nil, &people)
	joined := ""
	for _, p := range people {
		if p.Email == "new@example.com" {
			joined = p.Access
		}
	}
	if joined != "viewer" {
		t.Fatalf("the person joined as %q, want the newest link's level (viewer); people: %+v", joined, people)
	}
	// An admin re-inviting does not end an owner's invitation to be owner.
	admin := e.person(owner, "admin@example.com", "admin")
	_, page := owner.submit("/people/invite", url.Values{"email": {"heir@example.com"}, "access": {"owner"}})
	ownerLink := inviteLink.FindStringSubmatch(page)
	admin.post("/people/invite", url.Values{"email": {"heir@example.com"}, "access": {"viewer"}})
	if ownerLink == nil {
		t.Fatal("no owner invitation link")
	}
	if resp, _ := e.browser().get("/invite/" + ownerLink[1]); resp.StatusCode != http.StatusOK {
		t.Fatalf("an admin's re-invite ended the owner's invitation: %d", resp.StatusCode)
	}
}
