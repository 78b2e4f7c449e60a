package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var navLink = regexp.MustCompile(`href="(/[a-z]+)"[^>]*data-testid="nav-([a-z]+)"`)

// The nav offers only the pages the person may open: a tenant's admin saw
// Agents, Skills, Notifications and Functions, each answering 403.
func TestNavShowsOnlyPagesThePersonMayOpen(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tn := e.acme(owner.token())
	admin := e.tenantPerson(owner, "ada@acme.test", "admin", tn.ID)
	_, page := admin.get("/sessions")
	links := navLink.FindAllStringSubmatch(page, -1)
	if len(links) == 0 {
		t.Fatalf("no nav on the tenant admin's page:\n%s", page)
	}
	shown := map[string]bool{}
	for _, l := range links {
		shown[l[2]] = true
		if resp, _ := admin.get(l[1]); resp.StatusCode != http.StatusOK {
			t.Errorf("the nav offers %s to acme's admin, which answers %d", l[1], resp.StatusCode)
		}
	}
	for _, hidden := range []string{"agents", "skills", "notifications", "functions"} {
		if shown[hidden] {
			t.Errorf("the nav offers %s to acme's admin", hidden)
		}
	}
	for _, want := range []string{"sessions", "people"} {
		if !shown[want] {
			t.Errorf("the nav of acme's admin lacks %s", want)
		}
	}
	_, page = owner.get("/sessions")
	if n := len(navLink.FindAllString(page, -1)); n != 15 || !strings.Contains(page, `data-testid="nav-agents"`) {
		t.Errorf("the owner's nav has %d items, not the 14 pages and API tokens", n)
	}
}

// acme makes the tenant acme with an owner's token and returns it.
func (e *env) acme(tok string) struct{ ID string } {
	e.t.Helper()
	var tn struct{ ID string }
	if s := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, &tn); s != 201 {
		e.t.Fatalf("Tenant.create: %d", s)
	}
	return tn
}
