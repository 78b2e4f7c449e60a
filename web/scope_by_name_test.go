package web_test

import (
	"strings"
	"testing"
)

// A role's or a token's scope may name its tenant or vault by name, as
// refusals print it ("Vault.use vault:customer-a"); it is stored by id.
// Before, "tenant:acme" was refused with 'no tenant "acme"' while acme existed.
func TestScopesTakeTenantAndVaultNames(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	var tenant, vault struct{ ID string }
	if s := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, &tenant); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	if s := e.api(tok, "POST", "/vaults", map[string]any{"name": "customer-a", "tenant": "acme"}, &vault); s != 201 {
		t.Fatalf("Vault.create: %d", s)
	}
	var role struct {
		Permissions []struct {
			Scope     string `json:"scope"`
			ScopeName string `json:"scope_name"`
		}
	}
	if s := e.api(tok, "POST", "/roles", map[string]any{"name": "Approver", "permissions": []map[string]any{
		{"verb": "Approval.approve", "scope": "tenant:acme"}, {"verb": "Vault.use", "scope": "vault:customer-a"}}}, &role); s != 201 {
		t.Fatalf("Role.create with scopes by name: %d", s)
	}
	if len(role.Permissions) != 2 || role.Permissions[0].Scope != "tenant:"+tenant.ID || role.Permissions[1].Scope != "vault:"+vault.ID {
		t.Errorf("the role's scopes are not stored by id: %+v", role.Permissions)
	}
	var made struct{ Permissions []string }
	if s := e.api(tok, "POST", "/tokens", map[string]any{"name": "n", "permissions": []string{"Credential.list vault:customer-a"}}, &made); s != 201 {
		t.Fatalf("Token.create with a vault by name: %d", s)
	}
	if len(made.Permissions) != 1 || made.Permissions[0] != "Credential.list vault:"+vault.ID {
		t.Errorf("the token's permission: %v", made.Permissions)
	}
	var p problem
	if s := e.api(tok, "POST", "/roles", map[string]any{"name": "Other", "permissions": []map[string]any{
		{"verb": "Vault.use", "scope": "vault:nowhere"}}}, &p); s != 422 || p.Field != "permissions[0].scope" || !strings.Contains(p.Detail, `no vault "nowhere"`) {
		t.Errorf("a vault no one has: %d %+v", s, p)
	}
}
