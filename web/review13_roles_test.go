package web_test

import (
	"regexp"
	"strings"
	"testing"
)

// A tenant's admin's Roles page offered every verb and the scope
// "Everything" (each refused) and counted the operator's built-in levels;
// it offers the verbs they hold, scopes within their tenant, and counts
// what a tenant's levels hold.
func TestTenantAdminsRolesPageOffersOnlyWhatTheyMayGrant(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tn := e.acme(owner.token())
	admin := e.tenantPerson(owner, "ada@acme.test", "admin", tn.ID)
	_, page := admin.get("/roles")
	if !strings.Contains(page, `value="Session.list"`) {
		t.Fatalf("acme's admin is offered no verbs:\n%s", page)
	}
	for _, v := range []string{"Agent.create", "Skill.create", "Tenant.create", "User.grant_owner"} {
		if strings.Contains(page, `value="`+v+`"`) {
			t.Errorf("acme's admin is offered %s", v)
		}
	}
	if strings.Contains(page, `<option value="*"`) || strings.Contains(page, ">Everything<") {
		t.Errorf("acme's admin is offered the scope Everything")
	}
	count := func(page, role string) string {
		m := regexp.MustCompile(`(?s)data-testid="role-` + role + `">.*?</td>\s*<td>(\d+)</td>`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return m[1]
	}
	_, ownerPage := owner.get("/roles")
	if a, o := count(page, "admin"), count(ownerPage, "admin"); a == "" || a == o {
		t.Errorf("acme's admin level counts %s permissions, as the operator's (%s)", a, o)
	}
	if !strings.Contains(ownerPage, `value="Agent.create"`) || !strings.Contains(ownerPage, ">Everything<") {
		t.Errorf("the owner is not offered Agent.create on Everything")
	}
}
