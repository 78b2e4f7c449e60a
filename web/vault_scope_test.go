package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const aliceSecret = "alice-vault-secret-Kq27-never-shown"

// A member cannot bind, read, list the credentials of, change or delete a
// vault another member made — through the API and through the console —
// and the refusal names the permission with the vault's name; the vault's
// maker still can; the Audit page shows what was missing.
func TestMemberCannotUseAnothersVault(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	alice := e.person(owner, "alice@example.com", "member")
	bob := e.person(owner, "bob@example.com", "member")
	ownerTok, aliceTok, bobTok := owner.token(), alice.token(), bob.token()

	id := alice.createVault("customer-a")
	if resp, _ := alice.post("/vaults/"+id+"/credentials", url.Values{"prefix": {"https://api.example.com/"}, "type": {"bearer"}, "secret": {aliceSecret}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice sets her vault's credential: %d", resp.StatusCode)
	}
	_, draft := e.agentWithDraft(ownerTok)
	if s := e.api(ownerTok, "POST", "/versions/"+draft.ID+"/publish", nil, nil); s != 200 {
		t.Fatalf("publish: %d", s)
	}

	// The API: each of the five is 403 naming the permission and the vault.
	var seen []string
	for _, c := range []struct {
		what, method, path string
		body               any
		missing            string
	}{
		{"bind", "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{id}}, "Vault.use"},
		{"bind by name", "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{"customer-a"}}, "Vault.use"},
		{"read", "GET", "/vaults/" + id, nil, "Vault.get"},
		{"list credentials", "GET", "/vaults/" + id + "/credentials", nil, "Credential.list"},
		{"change", "PUT", "/vaults/" + id + "/credentials", map[string]any{"prefix": "https://api.example.com/", "type": "bearer", "secret": "bob-overwrites"}, "Credential.set"},
		{"delete", "DELETE", "/vaults/" + id, nil, "Vault.delete"},
	} {
		var p problem
		if s := e.api(bobTok, c.method, c.path, c.body, &p); s != http.StatusForbidden || p.Code != "permission_denied" ||
			p.MissingPermission != c.missing+" vault:customer-a" {
			t.Errorf("API %s: %d %+v", c.what, s, p)
		}
		seen = append(seen, p.Detail)
	}
	var list []struct{ ID string }
	if s := e.api(bobTok, "GET", "/vaults", nil, &list); s != 200 || len(list) != 0 {
		t.Errorf("bob's GET /vaults: %d %+v", s, list)
	}

	// The console: the same five, refused with the permission named.
	_, page := bob.post("/sessions", url.Values{"version": {draft.ID}, "vaults": {id}, "title": {"borrowed"}})
	seen = append(seen, page)
	if !strings.Contains(html.UnescapeString(page), "Vault.use vault:customer-a") {
		t.Errorf("console bind: the form does not name Vault.use vault:customer-a:\n%s", visibleText(page))
	}
	resp, page := bob.get("/vaults/" + id)
	seen = append(seen, page)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "may not Vault.get vault:customer-a") || strings.Contains(page, "https://api.example.com/") {
		t.Errorf("console read: %d\n%s", resp.StatusCode, visibleText(page))
	}
	_, page = bob.get("/vaults")
	seen = append(seen, page)
	if strings.Contains(page, id) {
		t.Errorf("bob's Vaults page lists alice's vault:\n%s", visibleText(page))
	}
	// A refused change or delete comes back to the vault with the refusal.
	for _, c := range []struct{ what, path, missing string }{
		{"change", "/vaults/" + id + "/credentials", "Credential.set"},
		{"delete", "/vaults/" + id + "/delete", "Vault.delete"},
	} {
		resp, page := bob.post(c.path, url.Values{"prefix": {"https://api.example.com/"}, "type": {"bearer"}, "secret": {"bob-overwrites"}})
		seen = append(seen, page)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/vaults/"+id {
			t.Errorf("console %s: %d %s", c.what, resp.StatusCode, resp.Header.Get("Location"))
			continue
		}
		_, page = bob.get(resp.Header.Get("Location"))
		seen = append(seen, page)
		if !strings.Contains(page, "may not "+c.missing+" vault:customer-a") || strings.Contains(page, "https://api.example.com/") {
			t.Errorf("console %s: the refusal is not shown:\n%s", c.what, visibleText(page))
		}
	}
	for _, s := range seen {
		if strings.Contains(s, aliceSecret) {
			t.Fatal("a refusal shows the vault's secret")
		}
	}

	// Nothing changed: the vault, its one credential and no session of bob's.
	var creds []struct{ Prefix, Type string }
	if s := e.api(aliceTok, "GET", "/vaults/"+id+"/credentials", nil, &creds); s != 200 || len(creds) != 1 || creds[0].Type != "bearer" {
		t.Fatalf("alice's credentials after bob's tries: %d %+v", s, creds)
	}
	var sessions []struct {
		CreatedBy string `json:"created_by"`
	}
	e.api(ownerTok, "GET", "/sessions", nil, &sessions)
	if len(sessions) != 0 {
		t.Fatalf("bob's refused binds made sessions: %+v", sessions)
	}
	// Its maker binds it, by console and API.
	if s := e.api(aliceTok, "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{id}}, nil); s != 201 {
		t.Fatalf("alice binds her own vault: %d", s)
	}
	if resp, _ := alice.post("/sessions", url.Values{"version": {draft.ID}, "vaults": {id}, "title": {"hers"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice binds her vault in the console: %d", resp.StatusCode)
	}

	// The Audit page says what was missing and what allowed.
	_, page = owner.get("/audit?by=bob%40example.com")
	if !strings.Contains(page, `data-testid="action-missing"`) || !strings.Contains(page, "Credential.set vault:customer-a") || !strings.Contains(page, "Vault.use vault:customer-a") {
		t.Errorf("the Audit page does not show the missing permissions:\n%s", visibleText(page))
	}
	_, page = owner.get("/audit?verb=Credential.set&by=alice%40example.com")
	if !strings.Contains(page, `data-testid="action-permission"`) || !strings.Contains(page, "Credential.* vault:"+id+" (direct)") {
		t.Errorf("the Audit page does not show what allowed alice:\n%s", visibleText(page))
	}
}
