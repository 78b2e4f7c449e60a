package web_test

import (
	"strings"
	"testing"
)

// Seating a tenant's person in a role holding the operator's own verbs is
// refused naming them (the person would hold none of them); before, the seat
// was made and the person listed the operator's agents. The operator's
// people are seated as before.
func TestSeatingATenantPersonInAnOperatorRoleIsRefusedNamingTheVerbs(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	tn := e.acme(tok)
	var rp problem
	if st := e.api(tok, "POST", "/roles", map[string]any{"name": "Builders", "permissions": []map[string]any{
		{"verb": "Agent.list", "scope": "*"}, {"verb": "Skill.create", "scope": "*"}, {"verb": "Vault.list", "scope": "*"}}}, &rp); st != 201 {
		t.Fatalf("Role.create: %d %+v", st, rp)
	}
	acme := e.tenantPerson(owner, "ada@acme.test", "viewer", tn.ID)
	var p problem
	if st := e.api(tok, "POST", "/seats", map[string]any{"user": "ada@acme.test", "role": "Builders"}, &p); st != 422 ||
		p.Field != "role" || !strings.Contains(p.Detail, "role Builders holds Agent.list, Skill.create, which only the operator's people hold") {
		t.Fatalf("the seat of acme's viewer: %d %+v", st, p)
	}
	if resp, _ := acme.get("/agents"); resp.StatusCode != 403 {
		t.Errorf("acme's viewer opens the operator's agents: %d", resp.StatusCode)
	}
	e.person(owner, "op@example.com", "viewer")
	if st := e.api(tok, "POST", "/seats", map[string]any{"user": "op@example.com", "role": "Builders"}, nil); st != 201 {
		t.Errorf("the operator's viewer is not seated: %d", st)
	}
}
