package web_test

import (
	"net/url"
	"strings"
	"testing"
)

// A role form that hands out a permission its maker does not hold comes back
// as typed with the refusal beside it. It answered a bare "Permission
// denied" page saying to ask an owner or admin to change one's access (to an
// admin), and what was typed was lost.
func TestRoleFormKeepsWhatWasTypedWhenAVerbIsNotHeld(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	admin := e.person(owner, "admin@example.com", "admin")
	resp, page := admin.post("/roles", url.Values{"name": {"Promoter"}, "description": {"names owners"},
		"verb": {"User.grant_owner"}, "scope": {"*"}})
	if resp.StatusCode != 403 {
		t.Fatalf("an admin's role with User.grant_owner: %d", resp.StatusCode)
	}
	for _, want := range []string{"Could not create the role", "User.grant_owner", `value="Promoter"`, "names owners",
		`value="User.grant_owner" checked`} {
		if !strings.Contains(page, want) {
			t.Errorf("the refused Create role form lacks %s", want)
		}
	}
	// On a role's page, Add permissions does the same.
	var role struct{ ID string }
	if s := e.api(admin.token(), "POST", "/roles", map[string]any{"name": "Readers"}, &role); s != 201 {
		t.Fatalf("Role.create: %d", s)
	}
	resp, page = admin.post("/roles/"+role.ID+"/permissions", url.Values{"verb": {"User.grant_owner"}, "scope": {"*"}})
	if resp.StatusCode != 403 || !strings.Contains(page, "User.grant_owner") || !strings.Contains(page, `value="User.grant_owner" checked`) {
		t.Errorf("Add permissions with User.grant_owner: %d", resp.StatusCode)
	}
	// A person who may not make roles at all still gets the refusal page.
	viewer := e.person(owner, "viewer@example.com", "viewer")
	if resp, _ := viewer.post("/roles", url.Values{"name": {"x"}, "verb": {"Session.get"}}); resp.StatusCode != 403 {
		t.Errorf("a viewer's Create role: %d", resp.StatusCode)
	}
}
