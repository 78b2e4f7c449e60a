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
	tn := e.acme(owner.token())
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

// The People page names each person's tenant (acme's admin looked like an
// operator's admin) and offers a tenant's person only the levels they can
// hold (owner was offered, and always refused).
func TestPeoplePageNamesTheTenantAndOffersOnlyLevelsTheyCanHold(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tn := e.acme(owner.token())
	admin := e.tenantPerson(owner, "ada@acme.test", "admin", tn.ID)
	e.person(owner, "op@example.com", "admin")
	_, page := owner.get("/people")
	cell := regexp.MustCompile(`(?s)data-testid="tenant-of-([^"]+)">(.*?)</td>`)
	tenants := map[string]string{}
	for _, m := range cell.FindAllStringSubmatch(page, -1) {
		tenants[m[1]] = strings.TrimSpace(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[2], ""))
	}
	if tenants["ada@acme.test"] != "acme" || tenants["op@example.com"] != "The operator" {
		t.Errorf("the People page's tenant column: %v", tenants)
	}
	dropdown := func(page, email string) string {
		return regexp.MustCompile(`(?s)data-testid="access-` + regexp.QuoteMeta(email) + `">.*?</select>`).FindString(page)
	}
	if d := dropdown(page, "ada@acme.test"); d == "" || strings.Contains(d, `value="owner"`) {
		t.Errorf("acme's admin's access offers owner: %s", d)
	}
	if d := dropdown(page, "op@example.com"); !strings.Contains(d, `value="owner"`) {
		t.Errorf("the operator's admin's access does not offer owner: %s", d)
	}
	_, page = admin.get("/people")
	if d := dropdown(page, "ada@acme.test"); strings.Contains(d, `value="owner"`) {
		t.Errorf("acme's admin is offered owner on their own People page: %s", d)
	}
	if strings.Contains(page, `<option value="owner"`) {
		t.Errorf("acme's admin's People page offers owner")
	}
}
