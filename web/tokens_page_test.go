package web_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// The API tokens page offers the verbs the person holds and a scope; a token
// made there holds only the checked verbs in that scope, and the list shows them.
func TestTokensPageNarrowsATokenToCheckedVerbs(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	version := e.publishedEmpty(tok)
	ses, _ := e.sessionOf(tok, version, nil)

	viewer := e.person(owner, "viewer@example.com", "viewer")
	_, page := viewer.get("/tokens")
	if !strings.Contains(page, `data-testid="token-verb-Session.get"`) || strings.Contains(page, `data-testid="token-verb-Agent.create"`) {
		t.Fatalf("a viewer's Tokens page should offer Session.get and not Agent.create:\n%s", page)
	}
	if !strings.Contains(page, `value="session:`+ses+`"`) {
		t.Errorf("the scope picker does not offer the session")
	}
	_, page = viewer.submit("/tokens", url.Values{"name": {"reader"}, "expires": {"1h"},
		"permissions": {"Session.get", "Session.tools"}, "scope": {"session:" + ses}})
	secret := regexp.MustCompile(`sbk_[a-z0-9]+`).FindString(page)
	if secret == "" {
		t.Fatalf("no token shown:\n%s", page)
	}
	for _, want := range []string{"Session.get session:" + ses, "Session.tools session:" + ses} {
		if !strings.Contains(page, want) {
			t.Errorf("the Tokens page does not list %q", want)
		}
	}
	if s := e.api(secret, "GET", "/sessions/"+ses, nil, nil); s != 200 {
		t.Errorf("the page's narrowed token reading its session: %d", s)
	}
	if s := e.api(secret, "GET", "/sessions", nil, nil); s != 403 {
		t.Errorf("the page's narrowed token listing sessions: %d", s)
	}
	// A verb the viewer does not hold, posted anyway, is refused by name.
	resp, page := viewer.post("/tokens", url.Values{"name": {"x"}, "permissions": {"Agent.create"}})
	if resp.StatusCode != 422 || !strings.Contains(page, "Agent.create *") {
		t.Errorf("a token form with Agent.create from a viewer: %d", resp.StatusCode)
	}
	if strings.Contains(page, secret) {
		t.Error("the token's secret is shown again")
	}
}
