package web_test

import (
	"html"
	"net/url"
	"strings"
	"testing"
)

// A 403 page keeps the person's address as written and says who could lift
// the refusal in terms true of them. It read "Ada@acme.test (admin) may not
// Skill.list. An owner or admin can change a person's access on the People
// page." to a tenant's admin, whose tenant can never hold Skill.list.
func TestForbiddenPageNamesThePersonAndWhoCouldHelp(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	if s := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, nil); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	var inv struct{ URL string }
	if s := e.api(tok, "POST", "/users", map[string]any{"email": "ada@acme.test", "access": "admin", "tenant": "acme"}, &inv); s != 201 {
		t.Fatalf("User.invite: %d", s)
	}
	ada := e.browser()
	if resp, _ := ada.post(inv.URL[strings.Index(inv.URL, "/invite/"):], url.Values{"email": {"ada@acme.test"}, "password": {password}}); resp.StatusCode != 303 {
		t.Fatalf("accept: %d", resp.StatusCode)
	}
	resp, page := ada.get("/skills")
	page = html.UnescapeString(page)
	if resp.StatusCode != 403 || !strings.Contains(page, "ada@acme.test (admin) may not Skill.list. It is the operator's own: a tenant's access levels do not hold it.") ||
		strings.Contains(page, "Ada@acme.test") || strings.Contains(page, "An owner or admin can change") {
		t.Errorf("a tenant admin's /skills: %d\n%s", resp.StatusCode, page)
	}
	viewer := e.person(owner, "viewer@example.com", "viewer")
	resp, page = viewer.post("/agents", url.Values{"name": {"x"}})
	page = html.UnescapeString(page)
	if resp.StatusCode != 403 || !strings.Contains(page, "viewer@example.com (viewer) may not Agent.create. An owner or admin can change a person's access on the People page.") {
		t.Errorf("a viewer's Create agent: %d\n%.2000s", resp.StatusCode, page)
	}
}
