package web_test

import (
	"net/url"
	"strings"
	"testing"
)

// A refused token form comes back as it was typed: the name, the expiry,
// the checked verbs (their section open) and the scope. Before, a typo in
// "Expires in" reset the name to empty, the expiry to 30d and every box.
func TestTokensFormKeepsWhatWasTypedWhenRefused(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	version := e.publishedEmpty(tok)
	ses, _ := e.sessionOf(tok, version, nil)
	resp, page := owner.post("/tokens", url.Values{"name": {"nightly-report"}, "expires": {"5x"},
		"permissions": {"Session.get", "Session.tools"}, "scope": {"session:" + ses}})
	if resp.StatusCode != 422 || !strings.Contains(page, "expires") {
		t.Fatalf("a token form with expires 5x: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`value="nightly-report"`, `value="5x"`,
		`value="Session.get" checked`, `value="Session.tools" checked`,
		`value="session:` + ses + `" selected`, `data-testid="token-narrow" open`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the refused form lost %s", want)
		}
	}
	if strings.Contains(page, `value="Session.end" checked`) {
		t.Error("a verb not checked comes back checked")
	}
	// A fresh form still offers 30d.
	if _, page := owner.get("/tokens"); !strings.Contains(page, `value="30d"`) || strings.Contains(page, `data-testid="token-narrow" open`) {
		t.Error("the fresh form does not offer 30d closed")
	}
}
