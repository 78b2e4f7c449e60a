package web_test

import (
	"strings"
	"testing"
)

// The page behind a tenant's invitation says whose console it joins; it said
// "You were invited as admin." alike for the operator's and a customer's.
func TestInvitePageNamesTheTenant(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	if s := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, nil); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	for _, tc := range []struct{ tenant, email, want string }{
		{"acme", "ada@acme.test", "You were invited as admin of the tenant acme: you will see its sessions, vaults and people only."},
		{"", "op@example.com", "You were invited as admin.</p>"},
	} {
		var out struct{ URL string }
		if s := e.api(tok, "POST", "/users", map[string]any{"email": tc.email, "access": "admin", "tenant": tc.tenant}, &out); s != 201 {
			t.Fatalf("User.invite %s: %d", tc.email, s)
		}
		path := out.URL[strings.Index(out.URL, "/invite/"):]
		if _, page := e.browser().get(path); !strings.Contains(page, tc.want) {
			t.Errorf("the invitation of %s does not say %q", tc.email, tc.want)
		}
	}
}
