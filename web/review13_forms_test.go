package web_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// A refused invitation keeps the access level and tenant chosen: they reset to
// member and "The operator", so a retry invited an operator's member.
func TestRefusedInviteKeepsLevelAndTenant(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	var tn struct{ ID string }
	if s := e.api(owner.token(), "POST", "/tenants", map[string]any{"name": "acme"}, &tn); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	_, page := owner.submit("/people/invite", url.Values{"email": {"not-an-address"}, "access": {"viewer"}, "tenant": {tn.ID}})
	if !strings.Contains(page, "Could not invite") {
		t.Fatalf("the invitation was not refused:\n%s", page)
	}
	access := regexp.MustCompile(`(?s)<select id="invite-access".*?</select>`).FindString(page)
	if !strings.Contains(access, `<option value="viewer" selected>`) {
		t.Errorf("the refused form does not keep viewer:\n%s", access)
	}
	tenant := regexp.MustCompile(`(?s)<select id="invite-tenant".*?</select>`).FindString(page)
	if !strings.Contains(tenant, `<option value="`+tn.ID+`" selected>acme</option>`) {
		t.Errorf("the refused form does not keep acme:\n%s", tenant)
	}
}
