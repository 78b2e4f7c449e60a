package web_test

// Tenants (issue 13 item 5): a customer's admin sets their own vault's
// credential, approves their own sessions' calls, sees nothing of another
// tenant or of the operator on any list, and gets 404 on every noun of them.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// tenantSide is one tenant as the tests see it: its admin, a vault and a
// session, one call waiting for approval, and a sandbox with an archive.
type tenantSide struct {
	id, name        string
	admin           *client
	adminEmail      string
	token           string // the admin's API token
	vault           string
	session         session
	call, approval  string
	sandbox, userID string
}

// tenantWorld is newWorld (the operator's vault and published version) with
// tenants acme and globex, each with its own admin, vault and session, and
// an operator's session.
type tenantWorld struct {
	*world
	acme, globex tenantSide
	opSession    session
	opCall       string
	opApproval   string
	opSandbox    string
}

func newTenantWorld(t *testing.T) *tenantWorld {
	t.Helper()
	w := &tenantWorld{world: newWorld(t, everythingConfig)}
	owner := w.browserOf()
	for _, side := range []*tenantSide{&w.acme, &w.globex} {
		name := map[*tenantSide]string{&w.acme: "acme", &w.globex: "globex"}[side]
		var tv struct{ ID, Name string }
		if st := w.api(w.owner, "POST", "/tenants", map[string]any{"name": name}, &tv); st != 201 || tv.ID == "" {
			t.Fatalf("Tenant.create %s: %d %+v", name, st, tv)
		}
		side.id, side.name = tv.ID, name
		side.adminEmail = "admin@" + name + ".example"
		side.admin = w.tenantPerson(owner, side.adminEmail, "admin", name)
		side.token = side.admin.token()
		var u []struct{ ID, Email string }
		w.api(w.owner, "GET", "/users", nil, &u)
		for _, x := range u {
			if x.Email == side.adminEmail {
				side.userID = x.ID
			}
		}
		// The operator makes the tenant's vault (empty) and session.
		var v struct{ ID, Tenant string }
		if st := w.api(w.owner, "POST", "/vaults", map[string]any{"name": name + "-keys", "tenant": name}, &v); st != 201 || v.Tenant != tv.ID {
			t.Fatalf("Vault.create in %s: %d %+v", name, st, v)
		}
		side.vault = v.ID
		if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{v.ID}, "title": name + " work", "tenant": name}, &side.session); st != 201 {
			t.Fatalf("Session.create in %s: %d", name, st)
		}
		side.sandbox = w.sandboxOf(side.session.ID)
	}
	// Globex's vault holds the MCP server's token; acme's admin fills theirs.
	w.fillVault(w.owner, w.globex.vault)
	w.opSession = w.titledSession("operator work")
	w.opSandbox = w.sandboxOf(w.opSession.ID)
	// Each of the three sessions has a call waiting for approval.
	for _, s := range []struct {
		ses            session
		call, approval *string
	}{{w.globex.session, &w.globex.call, &w.globex.approval}, {w.opSession, &w.opCall, &w.opApproval}} {
		st, c := w.call(s.ses.Token, s.ses.ID, getEnv, map[string]any{}, 0)
		if st != 202 || c.Approval == nil {
			t.Fatalf("ask-first call: %d %+v", st, c)
		}
		*s.call, *s.approval = c.ID, c.Approval.ID
	}
	return w
}

// fillVault sets the MCP server's token in a vault, as token's holder.
func (w *tenantWorld) fillVault(token, vault string) {
	w.t.Helper()
	if st := w.api(token, "PUT", "/vaults/"+vault+"/credentials", map[string]any{"prefix": w.mcpURL, "type": "bearer", "secret": mcpToken}, nil); st != 200 {
		w.t.Fatalf("Credential.set in %s: %d", vault, st)
	}
}

// tenantPerson invites someone into a tenant through the People page's
// tenant picker and returns their signed-in browser.
func (e *env) tenantPerson(owner *client, email, access, tenant string) *client {
	e.t.Helper()
	_, page := owner.submit("/people/invite", url.Values{"email": {email}, "access": {access}, "tenant": {tenant}})
	m := inviteLink.FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no invitation link on the People page:\n%s", page)
	}
	b := e.browser()
	if resp, _ := b.post("/invite/"+m[1], url.Values{"password": {password}}); resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("accepting the invitation answered %d", resp.StatusCode)
	}
	return b
}

// sandboxOf records a suspended sandbox of a session, as the sandbox
// manager leaves one (its archive is listed; no machine is needed).
func (w *tenantWorld) sandboxOf(sessionID string) string {
	w.t.Helper()
	now := time.Now().UTC()
	sb := models.Sandbox{ID: "sbx_" + strings.TrimPrefix(sessionID, "ses_"), SessionID: sessionID, GrantName: "box", ReleaseName: "2026",
		State: "suspended", SuspendedAt: &now, ArchiveBytes: 1234, ArchiveAt: &now, CreatedAt: now}
	if err := w.rt.DB().Create(&sb).Error; err != nil {
		w.t.Fatal(err)
	}
	return sb.ID
}

func TestTenantAdminSetsACredentialAndApprovesTheirCall(t *testing.T) {
	w := newTenantWorld(t)
	acme := w.acme

	// The tenant's vault is empty: the operator made it, the tenant's admin
	// fills it. Their session's MCP server wants the token.
	var cred struct {
		ID        string `json:"id"`
		SecretSet bool   `json:"secret_set"`
	}
	if st := w.api(acme.token, "PUT", "/vaults/"+acme.vault+"/credentials", map[string]any{"prefix": w.mcpURL, "type": "bearer", "secret": mcpToken}, &cred); st != 200 || !cred.SecretSet {
		t.Fatalf("Credential.set by the tenant's admin: %d %+v", st, cred)
	}
	// Also from the console's vault page.
	if resp, page := acme.admin.submit("/vaults/"+acme.vault+"/credentials", url.Values{"prefix": {w.mcpURL + "/other"}, "type": {"bearer"}, "secret": {"second-secret-93c1"}}); resp.StatusCode >= 400 || strings.Contains(page, "second-secret-93c1") {
		t.Fatalf("console Credential.set: %d", resp.StatusCode)
	}
	var vlt struct{ Credentials []struct{ Prefix string } }
	if st := w.api(acme.token, "GET", "/vaults/"+acme.vault, nil, &vlt); st != 200 || len(vlt.Credentials) != 2 {
		t.Fatalf("Vault.get by the tenant's admin: %d %+v", st, vlt)
	}

	// Their session's ask-first call waits; only it is in their queue.
	waiting := w.callAsync(acme.session.Token, acme.session.ID, getEnv, map[string]any{}, 30)
	w.pending(w.owner, "", 3)
	qs := w.pending(acme.token, "", 1)
	if qs[0].Session != acme.session.ID {
		t.Fatalf("the tenant's admin sees another session's approval: %+v", qs[0])
	}
	// The pending badge counts theirs alone.
	if _, page := acme.admin.get("/approvals"); !strings.Contains(page, "(1) Approvals") {
		t.Fatalf("the approvals page does not count one pending approval for the tenant's admin")
	}
	if st := w.api(acme.token, "POST", "/approvals/"+qs[0].ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve by the tenant's admin: %d", st)
	}
	if c := receiveCall(t, waiting); c.Status != "succeeded" || !strings.Contains(string(c.Output), "GZIP_ALLOWED_DOMAINS") {
		t.Fatalf("the approved call (through the tenant's credential) returned %+v", c)
	}
	// The Action says who approved and with which permission.
	var acts []struct {
		Verb, By, Verdict string
		Permission        string `json:"permission"`
	}
	w.api(w.owner, "GET", "/actions?verb=Approval.approve", nil, &acts)
	if len(acts) == 0 || acts[0].By != acme.adminEmail || acts[0].Verdict != "allowed" {
		t.Fatalf("the approval's Action: %+v", acts)
	}
	// The tenant's admin's own sessions and sandboxes are theirs to read.
	if st := w.api(acme.token, "GET", "/sessions/"+acme.session.ID, nil, nil); st != 200 {
		t.Fatalf("Session.get of their own session: %d", st)
	}
	if st := w.api(acme.token, "GET", "/sandboxes/"+acme.sandbox, nil, nil); st != 200 {
		t.Fatalf("Sandbox.get of their own sandbox: %d", st)
	}
	for _, path := range []string{"/sessions/" + acme.session.ID, "/vaults/" + acme.vault, "/sandboxes", "/sessions/" + acme.session.ID + "/sandboxes"} {
		if resp, _ := acme.admin.get(path); resp.StatusCode != 200 {
			t.Errorf("console %s for the tenant's admin: %d", path, resp.StatusCode)
		}
	}
}

func TestTenantAdminGets404OnEveryNounOfAnother(t *testing.T) {
	w := newTenantWorld(t)
	acme, globex := w.acme, w.globex
	var ownerID string
	var us []struct{ ID, Email string }
	w.api(w.owner, "GET", "/users", nil, &us)
	for _, u := range us {
		if u.Email == "owner@example.com" {
			ownerID = u.ID
		}
	}
	// Another tenant's nouns, then the operator's.
	type noun struct{ session, vault, call, approval, sandbox, tenant, user string }
	for _, other := range []noun{
		{globex.session.ID, globex.vault, globex.call, globex.approval, globex.sandbox, globex.id, globex.userID},
		{w.opSession.ID, w.vault, w.opCall, w.opApproval, w.opSandbox, "", ownerID},
	} {
		type apiCall struct {
			method, path string
			body         any
		}
		calls := []apiCall{
			{"GET", "/sessions/" + other.session, nil},
			{"GET", "/sessions/" + other.session + "/tools", nil},
			{"GET", "/sessions/" + other.session + "/tool_calls", nil},
			{"GET", "/sessions/" + other.session + "/rules", nil},
			{"GET", "/sessions/" + other.session + "/volume", nil},
			{"GET", "/sessions/" + other.session + "/volume/notes.txt", nil},
			{"POST", "/sessions/" + other.session + "/tool_calls", map[string]any{"tool": getEnv, "input": map[string]any{}}},
			{"POST", "/sessions/" + other.session + "/end", nil},
			{"GET", "/tool_calls/" + other.call, nil},
			{"POST", "/tool_calls/" + other.call + "/cancel", nil},
			{"POST", "/approvals/" + other.approval + "/approve", map[string]any{}},
			{"POST", "/approvals/" + other.approval + "/deny", map[string]any{}},
			{"GET", "/vaults/" + other.vault, nil},
			{"GET", "/vaults/" + other.vault + "/credentials", nil},
			{"PUT", "/vaults/" + other.vault + "/credentials", map[string]any{"prefix": "https://x.example", "type": "bearer", "secret": "s"}},
			{"DELETE", "/vaults/" + other.vault, nil},
			{"GET", "/sandboxes/" + other.sandbox, nil},
			{"GET", "/sandboxes/" + other.sandbox + "/archive", nil},
			{"DELETE", "/sandboxes/" + other.sandbox + "/archive", nil},
			{"PATCH", "/users/" + other.user, map[string]any{"access": "viewer"}},
			{"DELETE", "/users/" + other.user, nil},
		}
		if other.tenant != "" {
			calls = append(calls, apiCall{"GET", "/tenants/" + other.tenant, nil})
		}
		for _, c := range calls {
			var p problem
			if st := w.api(acme.token, c.method, c.path, c.body, &p); st != 404 {
				t.Errorf("%s %s by acme's admin answered %d (%s %s), not 404", c.method, c.path, st, p.Code, p.Detail)
			}
		}
		// The console's pages of the same nouns.
		for _, path := range []string{"/sessions/" + other.session, "/sessions/" + other.session + "/files", "/sessions/" + other.session + "/sandboxes",
			"/vaults/" + other.vault, "/approvals/" + other.approval, "/sandboxes/" + other.sandbox + "/archive"} {
			resp, page := acme.admin.get(path)
			if resp.StatusCode != 404 && !(path == "/approvals/"+other.approval && !strings.Contains(page, other.approval) && !strings.Contains(page, "data-testid=\"approval-item\"")) {
				t.Errorf("console %s for acme's admin: %d", path, resp.StatusCode)
			}
		}
		for _, form := range []struct {
			path string
			f    url.Values
		}{
			{"/approvals/" + other.approval + "/approve", url.Values{}},
			{"/vaults/" + other.vault + "/credentials", url.Values{"prefix": {"https://x.example"}, "type": {"bearer"}, "secret": {"s"}}},
			{"/sessions/" + other.session + "/end", url.Values{}},
		} {
			resp, _ := acme.admin.post(form.path, form.f)
			if resp.StatusCode == http.StatusSeeOther {
				// A form's refusal comes back as a flash on the page it returns to.
				_, page := acme.admin.get(resp.Header.Get("Location"))
				if m := flashText.FindAllStringSubmatch(page, -1); m == nil || !strings.Contains(strings.ToLower(m[len(m)-1][1]), "no ") {
					t.Errorf("console POST %s for acme's admin: flash %q", form.path, m)
				}
			} else if resp.StatusCode != 404 {
				t.Errorf("console POST %s for acme's admin: %d", form.path, resp.StatusCode)
			}
		}
	}
	// Nothing of the other side changed: its call still waits, its vault is whole.
	if qs := w.pending(w.owner, "", 2); len(qs) != 2 {
		t.Fatalf("pending approvals after the refusals: %+v", qs)
	}
	var v struct{ Credentials []json.RawMessage }
	if w.api(w.owner, "GET", "/vaults/"+w.vault, nil, &v); len(v.Credentials) != 1 {
		t.Fatalf("the operator's vault after the refusals: %+v", v)
	}
	// A tenant's person cannot reach into another tenant by naming it either.
	var p problem
	if st := w.api(acme.token, "POST", "/vaults", map[string]any{"name": "sneaky", "tenant": globex.name}, &p); st != 422 || p.Field != "tenant" {
		t.Fatalf("Vault.create naming another tenant: %d %+v", st, p)
	}
	if st := w.api(acme.token, "POST", "/users", map[string]any{"email": "x@globex.example", "access": "admin", "tenant": globex.id}, &p); st != 422 || p.Field != "tenant" {
		t.Fatalf("User.invite naming another tenant: %d %+v", st, p)
	}
	// And cannot bind another tenant's vault to their session, nor the operator bind it across.
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{globex.vault}, "tenant": acme.name}, &p); st != 422 || p.Field != "vaults[0]" || p.Code != "vault_other_tenant" {
		t.Fatalf("Session.create in acme with globex's vault: %d %+v", st, p)
	}
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{globex.vault}}, &p); st != 422 || p.Code != "vault_other_tenant" {
		t.Fatalf("an operator's session with globex's vault: %d %+v", st, p)
	}
	// The operator's vault may serve a tenant's session (its credentials stay hidden).
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{w.vault}, "tenant": acme.name}, nil); st != 201 {
		t.Fatalf("Session.create in acme with the operator's vault: %d", st)
	}
}

func TestTenantListsShowNothingOfOthers(t *testing.T) {
	w := newTenantWorld(t)
	acme, globex := w.acme, w.globex
	w.fillVault(acme.token, acme.vault)
	// Acme's session has a call of its own, decided, and its Actions.
	if _, c := w.call(acme.session.Token, acme.session.ID, "mcp__everything__echo", map[string]any{"message": "hi"}, 5); c.ID == "" {
		t.Fatalf("acme's call: %+v", c)
	}
	// What must not show: globex's and the operator's ids and names.
	others := []string{globex.session.ID, globex.vault, globex.call, globex.approval, globex.sandbox, globex.id, globex.name + "-keys", "globex work", globex.adminEmail,
		w.opSession.ID, w.vault, w.opCall, w.opApproval, w.opSandbox, "operator work", "owner@example.com", ">customer-a<"}
	check := func(where, body string) {
		t.Helper()
		for _, o := range others {
			if strings.Contains(body, o) {
				t.Errorf("%s shows %q to acme's admin", where, o)
			}
		}
	}
	for _, path := range []string{"/sessions", "/vaults", "/approvals", "/approvals?state=decided", "/actions", "/usage", "/sandboxes", "/users", "/tenants"} {
		var raw json.RawMessage
		if st := w.api(acme.token, "GET", path, nil, &raw); st != 200 {
			t.Fatalf("GET %s by acme's admin: %d", path, st)
		}
		check("API "+path, string(raw))
	}
	// And what must show: their own.
	var ss []struct{ ID string }
	w.api(acme.token, "GET", "/sessions", nil, &ss)
	if len(ss) != 1 || ss[0].ID != acme.session.ID {
		t.Fatalf("acme's admin lists sessions %+v", ss)
	}
	var sbs []struct{ ID string }
	w.api(acme.token, "GET", "/sandboxes", nil, &sbs)
	if len(sbs) != 1 || sbs[0].ID != acme.sandbox {
		t.Fatalf("acme's admin lists sandboxes %+v", sbs)
	}
	for _, path := range []string{"/", "/sessions", "/vaults", "/approvals", "/approvals/history", "/audit", "/usage", "/sandboxes", "/people", "/tenants", "/sessions/" + acme.session.ID} {
		resp, page := acme.admin.get(path)
		if resp.StatusCode != 200 {
			t.Errorf("console %s for acme's admin: %d", path, resp.StatusCode)
		}
		check("console "+path, page)
	}
	// The operator's people see every tenant.
	var all []struct{ ID string }
	w.api(w.owner, "GET", "/sessions", nil, &all)
	if len(all) != 3 {
		t.Fatalf("the owner lists %d sessions, not 3", len(all))
	}
}

func TestTenantVerbsAndPage(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	// The console's form: an error under its field, then a tenant.
	resp, page := owner.post("/tenants", url.Values{"name": {"Bad_Name"}})
	if resp.StatusCode != 422 || !strings.Contains(page, `data-testid="tenant-name"`) || !strings.Contains(page, "lowercase letters") {
		t.Fatalf("a bad tenant name: %d", resp.StatusCode)
	}
	if _, page := owner.submit("/tenants", url.Values{"name": {"acme"}}); countTestID(page, "tenant-row") != 1 {
		t.Fatalf("the Tenants page after creating acme:\n%s", page)
	}
	var p problem
	if st := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, &p); st != 409 || p.Code != "name_taken" {
		t.Fatalf("a second acme: %d %+v", st, p)
	}
	var tv struct {
		ID, Name                 string
		Sessions, Vaults, People int
	}
	if st := e.api(tok, "GET", "/tenants/acme", nil, &tv); st != 200 || tv.Name != "acme" {
		t.Fatalf("Tenant.get by name: %d %+v", st, tv)
	}
	if st := e.api(tok, "PATCH", "/tenants/"+tv.ID, map[string]any{"name": "acme-corp"}, &tv); st != 200 || tv.Name != "acme-corp" {
		t.Fatalf("Tenant.update: %d %+v", st, tv)
	}
	// A tenant holding a vault is not deleted; empty, it is.
	if st := e.api(tok, "POST", "/vaults", map[string]any{"name": "acme-keys", "tenant": "acme-corp"}, nil); st != 201 {
		t.Fatalf("Vault.create in the tenant: %d", st)
	}
	if st := e.api(tok, "DELETE", "/tenants/"+tv.ID, nil, &p); st != 409 || p.Code != "tenant_not_empty" || !strings.Contains(p.Detail, "1 vaults") {
		t.Fatalf("deleting a tenant that holds a vault: %d %+v", st, p)
	}
	// The vault form offers the tenants.
	if _, page := owner.get("/vaults"); !strings.Contains(page, `data-testid="vault-tenant"`) || !strings.Contains(page, ">acme-corp<") {
		t.Fatalf("the vault form has no tenant picker")
	}
	if st := e.api(tok, "DELETE", "/vaults/acme-keys", nil, nil); st != 204 {
		t.Fatalf("Vault.delete: %d", st)
	}
	if st := e.api(tok, "DELETE", "/tenants/"+tv.ID, nil, nil); st != 204 {
		t.Fatalf("Tenant.delete of an empty tenant: %d", st)
	}
	// An owner cannot be a tenant's person.
	if st := e.api(tok, "POST", "/tenants", map[string]any{"name": "globex"}, nil); st != 201 {
		t.Fatal("Tenant.create globex")
	}
	if st := e.api(tok, "POST", "/users", map[string]any{"email": "boss@globex.example", "access": "owner", "tenant": "globex"}, &p); st != 422 || p.Field != "access" {
		t.Fatalf("inviting a tenant's owner: %d %+v", st, p)
	}
	// The Changes record each tenant change.
	var n int64
	e.rt.DB().Model(&models.Change{}).Where("kind LIKE 'tenant.%'").Count(&n)
	if n != 4 {
		t.Fatalf("%d tenant Changes, not 4 (create, rename, delete, create)", n)
	}
}

// TestBrowserTenantSeesOnlyItsSessionsAndApprovals: acme's admin's sessions
// list and live approvals queue in headless Chromium show acme's alone,
// while calls of globex and of the operator arrive.
func TestBrowserTenantSeesOnlyItsSessionsAndApprovals(t *testing.T) {
	w := newTenantWorld(t)
	acme := w.acme
	w.fillVault(acme.token, acme.vault)
	ctx := browserCtx(t)
	steps(t, ctx, "sign in as acme's admin and open the sessions list",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), acme.adminEmail),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(w.srv.URL+"/sessions"),
		chromedp.WaitVisible(css(`main`)),
	)
	body := text(t, ctx, `main`)
	if !strings.Contains(body, "acme work") || strings.Contains(body, "globex work") || strings.Contains(body, "operator work") {
		t.Fatalf("acme's admin's sessions list reads:\n%s", body)
	}
	steps(t, ctx, "open the approvals queue: globex's and the operator's waiting calls are not in it",
		chromedp.Navigate(w.srv.URL+"/approvals"),
		chromedp.WaitVisible(css(`[data-testid=approval-queue] [data-testid=empty]`)),
		void(chromedp.Evaluate[bool](`window.notReloaded = true`)),
	)
	// Another tenant's call arrives: nothing shows. Then acme's: it shows live.
	w.callAsync(w.globex.session.Token, w.globex.session.ID, getEnv, map[string]any{}, 30)
	w.pending(w.owner, "", 3)
	waiting := w.callAsync(acme.session.Token, acme.session.ID, getEnv, map[string]any{}, 30)
	w.pending(acme.token, "", 1)
	steps(t, ctx, "acme's call appears live, alone, counted alone",
		watchDOM(queueItems+` === 1 && window.notReloaded === true`, 2*time.Second),
		watchDOM(`document.title === "(1) Approvals · Subako"`, time.Second),
		watchDOM(`document.querySelector("[data-testid=nav-approvals] .nav-count")?.textContent === "1"`, time.Second),
	)
	if q := text(t, ctx, `[data-testid=approval-queue]`); !strings.Contains(q, "acme work") || strings.Contains(q, "globex") || strings.Contains(q, "operator work") {
		t.Fatalf("the queue reads:\n%s", q)
	}
	screenshot(ctx, t, "tenant-approvals-queue")
	steps(t, ctx, "approve", chromedp.Click(css(`[data-testid=approval-approve]`)), chromedp.WaitVisible(css(`[data-testid=flash]`)))
	if c := receiveCall(t, waiting); c.Status != "succeeded" {
		t.Fatalf("the approved call returned %+v", c)
	}
}

// TestTenantAdminConnectsTheirVaultWithOAuth is issue 17 item 1's last
// sentence: a customer's admin connects their own tenant's vault with OAuth
// (registration, PKCE, the callback bound to their browser session), and
// their tenant's session calls the protected MCP server with it.
func TestTenantAdminConnectsTheirVaultWithOAuth(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	version := w.publish(secureConfig)
	if st := w.api(w.owner, "POST", "/tenants", map[string]any{"name": "acme"}, nil); st != 201 {
		t.Fatalf("Tenant.create: %d", st)
	}
	var v struct{ ID string }
	if st := w.api(w.owner, "POST", "/vaults", map[string]any{"name": "acme-oauth", "tenant": "acme"}, &v); st != 201 {
		t.Fatalf("Vault.create in acme: %d", st)
	}
	operatorVault := w.vault
	w.vault = v.ID // startConnect posts to w.vault
	admin := w.tenantPerson(w.browser, "admin@acme.example", "admin", "acme")

	// The operator's vault cannot be connected by acme's admin: it does not exist to them.
	resp, _ := admin.post("/vaults/"+operatorVault+"/oauth/connect", url.Values{"prefix": {w.as.MCPURL}})
	if resp.StatusCode == http.StatusSeeOther {
		_, page := admin.get(resp.Header.Get("Location"))
		if m := flashText.FindAllStringSubmatch(page, -1); m == nil || !strings.Contains(strings.ToLower(m[len(m)-1][1]), "no vault") {
			t.Fatalf("connecting the operator's vault as acme's admin: flash %q", m)
		}
	} else if resp.StatusCode != 404 {
		t.Fatalf("connecting the operator's vault as acme's admin answered %d", resp.StatusCode)
	}

	back := w.approveHTTP(w.startConnect(admin, "", ""))
	resp, _ = admin.get(strings.TrimPrefix(back, w.srv.URL))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/vaults/"+v.ID {
		t.Fatalf("the callback for acme's admin answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := admin.get("/vaults/" + v.ID)
	if got := credentialStatus(page); !strings.Contains(got, "connected") {
		t.Fatalf("acme's admin's vault page reads %q after connecting", got)
	}
	var s session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": version, "vaults": []string{v.ID}, "title": "acme oauth", "tenant": "acme"}, &s); st != 201 {
		t.Fatalf("Session.create in acme: %d", st)
	}
	if c := w.callTool(s, "mcp__secure__whoami", map[string]any{}); c.Status != "succeeded" || !strings.Contains(string(c.Output), "alice") {
		t.Fatalf("whoami through acme's OAuth credential: %+v %s", c, c.Output)
	}
	w.searchSecrets()
}

// TestTenantPersonHoldsNoOperatorVerbs: a tenant's admin's preset leaves out
// runtime.OperatorOnlyVerbs (agents, versions, skills, functions, channels,
// tenants, naming owners).
func TestTenantPersonHoldsNoOperatorVerbs(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	tok := owner.token()
	if st := e.api(tok, "POST", "/tenants", map[string]any{"name": "acme"}, nil); st != 201 {
		t.Fatalf("Tenant.create: %d", st)
	}
	admin := e.tenantPerson(owner, "admin@acme.example", "admin", "acme").token()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/agents", map[string]any{"name": "sneaky"}},
		{"POST", "/skills", map[string]any{"name": "sneaky"}},
		{"POST", "/tenants", map[string]any{"name": "globex"}},
		{"POST", "/channels", map[string]any{"name": "x", "kind": "webhook", "url": "https://example.com/hook"}},
		{"PATCH", "/tenants/acme", map[string]any{"name": "acme-corp"}},
		{"POST", "/users", map[string]any{"email": "boss@acme.example", "access": "owner"}},
	} {
		var p problem
		if st := e.api(admin, c.method, c.path, c.body, &p); st < 400 || st == 422 && p.Field != "access" {
			t.Errorf("%s %s by acme's admin answered %d %+v", c.method, c.path, st, p)
		}
	}
	var p problem
	if st := e.api(admin, "GET", "/agents", nil, &p); st != 403 || p.MissingPermission != "Agent.list" {
		t.Errorf("acme's admin lists agents: %d %+v", st, p)
	}
	// What they do hold: their tenant, their people.
	var tv struct{ Name string }
	if st := e.api(admin, "GET", "/tenants/acme", nil, &tv); st != 200 || tv.Name != "acme" {
		t.Fatalf("Tenant.get of their own tenant: %d %+v", st, tv)
	}
	if st := e.api(admin, "POST", "/users", map[string]any{"email": "member@acme.example", "access": "member"}, nil); st != 201 {
		t.Fatalf("User.invite into their tenant: %d", st)
	}
}
