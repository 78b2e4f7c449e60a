package web_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// The pages issue 13 added (Roles, a role, Changes, Tenants, API tokens with
// a narrowed token) fit the window and pass axe-core, as the older pages do
// in TestBrowserLayoutHoldsAndPagesAreAccessible, which does not open them.
func TestBrowserAccessPagesFitAndAreAccessible(t *testing.T) {
	axeJS, err := os.ReadFile("testdata/axe/node_modules/axe-core/axe.min.js")
	if err != nil {
		t.Fatal("axe-core is not installed: npm ci --prefix web/testdata/axe (make deps does it)")
	}
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	e.person(owner, "bob@example.com", "member")
	var tenant, vault, role struct{ ID string }
	if s := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, &tenant); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	if s := e.api(tok, "POST", "/vaults", map[string]any{"name": "customer-a", "tenant": "acme"}, &vault); s != 201 {
		t.Fatalf("Vault.create: %d", s)
	}
	if s := e.api(tok, "POST", "/roles", map[string]any{"name": "Approver", "permissions": []map[string]any{
		{"verb": "Approval.approve", "scope": "tenant:" + tenant.ID, "limit_count": 20, "limit_period": "hour"},
		{"verb": "Vault.use", "scope": "vault:" + vault.ID}}}, &role); s != 201 {
		t.Fatalf("Role.create: %d", s)
	}
	if s := e.api(tok, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": "Approver"}, nil); s != 201 {
		t.Fatalf("Seat.create: %d", s)
	}
	if s := e.api(tok, "POST", "/tokens", map[string]any{"name": "narrow", "permissions": []string{"Credential.list vault:" + vault.ID}}, nil); s != 201 {
		t.Fatalf("Token.create: %d", s)
	}
	for _, width := range []int64{1400, 390} {
		t.Run(fmt.Sprintf("%d px", width), func(t *testing.T) {
			ctx := browserCtx(t)
			steps(t, ctx, "emulate the window", chromedp.EmulateViewport(width, 900))
			steps(t, ctx, "sign in", ownerSignIn(e.srv.URL)...)
			for _, p := range []string{"/roles", "/roles/" + role.ID, "/roles/member", "/changes", "/tenants", "/tokens", "/people"} {
				checkPage(t, ctx, e.srv.URL+p, fmt.Sprintf("%s at %d px", p, width), string(axeJS))
			}
		})
	}
}
