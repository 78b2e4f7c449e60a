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

// A sandbox grant refused over its memory names the error on the memory input
// (aria-invalid, aria-describedby), as the other fields do; it stood apart.
func TestGrantResourceErrorIsTiedToItsInput(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	e.installTestFunction()
	_, v := e.agentWithDraft(tok)
	if s, body := e.rawAPI(tok, "PUT", "/versions/"+v.ID+"/config", knownToolsConfig); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	_, page := owner.submit("/versions/"+v.ID+"/grants/sandbox/workbench", url.Values{"name": {"workbench"}, "release": {"2026"},
		"network": {"unrestricted"}, "default_policy": {"allow"}, "memory_mib": {"999999"}})
	input := regexp.MustCompile(`<input id="res-memory_mib"[^>]*>`).FindString(page)
	if !strings.Contains(page, `id="resources.memory_mib-error"`) {
		t.Fatalf("no memory error on the refused form:\n%s", page)
	}
	if !strings.Contains(input, `aria-describedby="res-memory_mib-hint resources.memory_mib-error"`) || !strings.Contains(input, `aria-invalid`) {
		t.Errorf("the memory input is not tied to its error: %s", input)
	}
	if cpu := regexp.MustCompile(`<input id="res-cpu_percent"[^>]*>`).FindString(page); strings.Contains(cpu, "aria-invalid") {
		t.Errorf("the CPU input is marked invalid: %s", cpu)
	}
}
