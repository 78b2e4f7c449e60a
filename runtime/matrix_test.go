package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// matrixNouns are real nouns the matrix's calls name, one of each kind that
// has a scope, and a second of each to be the wrong scope.
type matrixNouns struct {
	vault, vault2, agent, agent2, version, session, session2, tenant, tenant2 string
}

func newMatrixWorld(t *testing.T) (*Runtime, matrixNouns) {
	t.Helper()
	ctx := t.Context()
	rt := New(modelstest.Open(t), Options{})
	t.Cleanup(rt.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var n matrixNouns
	for i, dst := range []*string{&n.vault, &n.vault2} {
		v, err := rt.VaultCreate(ctx, System, VaultInput{Name: []string{"customer-a", "customer-b"}[i]})
		must(err)
		*dst = v.ID
	}
	for i, dst := range []*string{&n.tenant, &n.tenant2} {
		*dst = newID("ten")
		must(rt.db.Create(&models.Tenant{ID: *dst, Name: []string{"acme", "globex"}[i], CreatedAt: rt.now()}).Error)
	}
	var versions []string
	for i, dst := range []*string{&n.agent, &n.agent2} {
		name := []string{"support", "billing"}[i]
		a, err := rt.AgentCreate(ctx, System, AgentInput{Name: &name})
		must(err)
		*dst = a.ID
		v, err := rt.VersionCreate(ctx, System, VersionCreateInput{Agent: a.ID, Config: json.RawMessage(`{}`)})
		must(err)
		_, err = rt.VersionPublish(ctx, System, v.ID)
		must(err)
		versions = append(versions, v.ID)
	}
	n.version = versions[0]
	for i, dst := range []*string{&n.session, &n.session2} {
		s, err := rt.SessionCreate(ctx, System, SessionCreateInput{Version: versions[i]})
		must(err)
		*dst = s.ID
	}
	return rt, n
}

// targets: what a call of verb names in the matrix, the scope that covers
// exactly that, and a scope of the same kind that does not.
func (n matrixNouns) targets(verb string) (target string, right, wrong Scope) {
	switch noun, _, _ := strings.Cut(verb, "."); noun {
	case "Vault", "Credential":
		return n.vault, Scope{ScopeVault, n.vault}, Scope{ScopeVault, n.vault2}
	case "Agent":
		return n.agent, Scope{ScopeAgent, n.agent}, Scope{ScopeAgent, n.agent2}
	case "Version":
		return n.version, Scope{ScopeAgent, n.agent}, Scope{ScopeAgent, n.agent2}
	case "Tenant":
		return n.tenant, Scope{ScopeTenant, n.tenant}, Scope{ScopeTenant, n.tenant2}
	case "Session", "ToolCall", "SessionRule", "Volume", "Sandbox", "Approval", "Archive",
		"Client", "ClientCall", "Resource", "Prompt":
		return n.session, Scope{ScopeSession, n.session}, Scope{ScopeSession, n.session2}
	}
	// Nouns of the whole installation (people, tokens, skills, functions,
	// usage, the audit log, channels, roles, seats, changes): no target.
	return "", ScopeAll, Scope{ScopeVault, n.vault2}
}

// matrixPrincipal holds exactly the grants given.
func matrixPrincipal(gs ...Grant) Principal {
	return Principal{Kind: "matrix", ID: "matrix", Label: "matrix@example.com", grants: gs}
}

// The permission matrix, generated from the verb registry: for every verb,
// a principal holding exactly that permission (on everything, and on just
// the noun the call names) passes the one check and runs; one without it is
// refused with missing_permission naming the verb and the noun's scope by
// name; one holding it in the wrong scope is refused the same way (a list
// naming nothing is allowed and shows only what its scope covers). Each
// call goes through runIn, so each writes its Action with the permission
// that allowed it or the one missing.
func TestPermissionMatrixOverEveryVerb(t *testing.T) {
	rt, n := newMatrixWorld(t)
	ctx := context.Background()
	verbs := AllVerbs()
	if len(verbs) < 80 {
		t.Fatalf("the verb registry lists only %d verbs", len(verbs))
	}
	call := func(p Principal, verb, target string) (bool, error) {
		ran := false
		var targets []string
		if target != "" {
			targets = []string{target}
		}
		err := rt.runIn(ctx, p, verb, CheckInput{}, func(a *act) error { ran = true; return nil }, targets...)
		return ran, err
	}
	refusedWith := func(what, verb string, ran bool, err error, missing string) {
		t.Helper()
		e, ok := AsError(err)
		if ran || !ok || e.Kind != KindForbidden || e.MissingPermission != missing {
			t.Errorf("%s %s: want refused with missing_permission %q; ran %v, err %v", what, verb, missing, ran, err)
		}
	}
	for i, verb := range verbs {
		target, right, wrong := n.targets(verb)
		missing := verb
		if target != "" {
			missing = verb + " " + rt.showScope(ctx, right)
		}
		other := verbs[(i+1)%len(verbs)]

		if ran, err := call(matrixPrincipal(Grant{Verb: verb, Source: "direct"}), verb, target); !ran || err != nil {
			t.Errorf("holding exactly %s on everything: ran %v, %v", verb, ran, err)
		}
		if target != "" {
			if ran, err := call(matrixPrincipal(Grant{Verb: verb, Scope: right}), verb, target); !ran || err != nil {
				t.Errorf("holding exactly %s %s: ran %v, %v", verb, right, ran, err)
			}
		}
		noun, _, _ := strings.Cut(verb, ".")
		if ran, err := call(matrixPrincipal(Grant{Verb: noun + ".*", Scope: right}), verb, target); !ran || err != nil {
			t.Errorf("holding %s.* %s for %s: ran %v, %v", noun, right, verb, ran, err)
		}
		ran, err := call(matrixPrincipal(Grant{Verb: other}), verb, target)
		refusedWith("without", verb, ran, err, missing)

		ran, err = call(matrixPrincipal(Grant{Verb: verb, Scope: wrong}), verb, target)
		if target == "" && strings.HasSuffix(verb, ".list") {
			// A list naming nothing runs, showing what its scope covers.
			if !ran || err != nil {
				t.Errorf("a list %s in a narrow scope: ran %v, %v", verb, ran, err)
			}
			if l := rt.listScope(matrixPrincipal(Grant{Verb: verb, Scope: wrong}), verb); l.All || len(l.Vaults) != 1 {
				t.Errorf("%s in scope %s lists %+v", verb, wrong, l)
			}
			continue
		}
		refusedWith("wrong scope", verb, ran, err, missing)
	}

	// Every refusal is an Action naming what was missing; every call
	// allowed names the permission.
	var acts []models.Action
	if err := rt.db.Where("by_id = ?", "matrix").Find(&acts).Error; err != nil {
		t.Fatal(err)
	}
	var allowed, refused int
	for _, a := range acts {
		switch a.Verdict {
		case VerdictAllowed:
			allowed++
			if !strings.HasPrefix(a.Permission, strings.SplitN(a.Verb, ".", 2)[0]+".") {
				t.Errorf("allowed %s recorded permission %q", a.Verb, a.Permission)
			}
		case VerdictRefused:
			refused++
			if !strings.HasPrefix(a.MissingPermission, a.Verb) || a.Reason != "missing permission "+a.MissingPermission {
				t.Errorf("refused %s recorded missing %q, reason %q", a.Verb, a.MissingPermission, a.Reason)
			}
		}
	}
	if allowed < 2*len(verbs) || refused < len(verbs)+len(verbs)/2 {
		t.Errorf("the matrix recorded %d allowed and %d refused Actions over %d verbs", allowed, refused, len(verbs))
	}
}

// A tenant's person asking about a noun of another tenant or of the
// operator gets not_found, whatever they hold in their own tenant.
func TestTenantPersonGetsNotFoundOutsideTheirTenant(t *testing.T) {
	rt, n := newMatrixWorld(t)
	ctx := context.Background()
	if err := rt.db.Model(&models.Session{}).Where("id = ?", n.session).Update("tenant_id", n.tenant).Error; err != nil {
		t.Fatal(err)
	}
	p := matrixPrincipal(Grant{Verb: "Session.*", Scope: Scope{ScopeTenant, n.tenant}}, Grant{Verb: "Vault.*", Scope: Scope{ScopeTenant, n.tenant}})
	p.TenantID = n.tenant
	if err := rt.runIn(ctx, p, "Session.get", CheckInput{}, func(*act) error { return nil }, n.session); err != nil {
		t.Errorf("their own tenant's session: %v", err)
	}
	for _, c := range []struct{ verb, target string }{{"Session.get", n.session2}, {"Vault.get", n.vault}, {"Vault.get", "customer-b"}} {
		err := rt.runIn(ctx, p, c.verb, CheckInput{}, func(*act) error { return nil }, c.target)
		if e, ok := AsError(err); !ok || e.Kind != KindNotFound {
			t.Errorf("%s %s of the operator: want not_found, got %v", c.verb, c.target, err)
		}
	}
}
