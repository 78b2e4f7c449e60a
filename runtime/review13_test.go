package runtime

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
)

// Hostile review of issue 13's permissions: each test is one defect found.

// seatedViewer makes a viewer seated (directly in the database) in a role
// holding perms, and returns them as they act.
func seatedViewer(t *testing.T, w *limitWorld, email string, perms ...models.Permission) (Principal, models.Seat) {
	t.Helper()
	ctx, rt := t.Context(), w.rts[0]
	if _, _, err := rt.UserCreate(ctx, System, email, AccessViewer, "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	var u models.User
	if err := w.db.First(&u, "email = ?", email).Error; err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	role := models.Role{ID: newID("role"), Name: "role-of-" + strings.Split(email, "@")[0], CreatedAt: now, UpdatedAt: now}
	seat := models.Seat{ID: newID("seat"), UserID: u.ID, RoleID: role.ID, CreatedAt: now}
	rows := []any{&role, &seat}
	for i := range perms {
		perms[i].ID, perms[i].HolderKind, perms[i].HolderID, perms[i].CreatedAt = newID("perm"), models.HolderRole, role.ID, now
		if perms[i].Scope == "" {
			perms[i].Scope = "*"
		}
		rows = append(rows, &perms[i])
	}
	for _, row := range rows {
		if err := w.db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range w.rts {
		r.auth.reset()
	}
	return rt.principalFor(ctx, u, ""), seat
}

// Unseating on one replica ends the seat's permissions on another within
// the auth cache's bound (authCacheTTL), as it does for a revoked token. The
// grant cache had no time bound: replica B kept the role's grants until a
// write of its own moved its generation on, for ever if none came.
func TestUnseatedOnAnotherReplicaIsRefusedWithinTheAuthTTL(t *testing.T) {
	w := newLimitWorld(t, 2)
	ctx := t.Context()
	a, b := w.rts[0], w.rts[1]
	p, seat := seatedViewer(t, w, "seated@example.com", models.Permission{Verb: "Agent.create"})
	name := "on-b"
	if _, err := b.AgentCreate(ctx, p, AgentInput{Name: &name}); err != nil {
		t.Fatalf("seated, on replica B: %v", err)
	}
	if err := a.SeatDelete(ctx, System, seat.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(authCacheTTL + 200*time.Millisecond)
	name = "after-unseat"
	_, err := b.AgentCreate(ctx, p, AgentInput{Name: &name})
	if e, _ := AsError(err); e == nil || e.Kind != KindForbidden || e.MissingPermission != "Agent.create" {
		t.Fatalf("unseated on replica A, replica B still allows Agent.create %s after it: %v", authCacheTTL, err)
	}
}

// An operator's person holding a verb only on one tenant (User.update
// tenant:acme, "manage acme's people") could call it on anything the call
// names no scoped noun of: they made themselves an admin. A person is no
// scoped noun, so the check found nothing to scope and let the tenant's
// grant cover the call; the verb filters by the caller's own tenant only.
func TestTenantScopedGrantOfAnOperatorPersonCoversNothingOutsideIt(t *testing.T) {
	w := newLimitWorld(t, 1)
	ctx, rt := t.Context(), w.rts[0]
	ten := models.Tenant{ID: newID("ten"), Name: "acme", CreatedAt: time.Now()}
	if err := w.db.Create(&ten).Error; err != nil {
		t.Fatal(err)
	}
	p, _ := seatedViewer(t, w, "support@example.com", models.Permission{Verb: "User.update", Scope: "tenant:" + ten.ID})
	admin := AccessAdmin
	_, err := rt.UserUpdate(ctx, p, UserUpdateInput{User: p.ID, Access: &admin})
	var u models.User
	w.db.First(&u, "id = ?", p.ID)
	if e, _ := AsError(err); e == nil || e.Kind != KindForbidden || u.Access != AccessViewer {
		t.Fatalf("holding User.update on tenant acme only, an operator's viewer made themselves %s: %v", u.Access, err)
	}
}

// A tenant's person sees nothing of another tenant on a list, whatever the
// operator seated them in: holding Session.list on an agent (the operator's
// support agent, serving every tenant), they listed the sessions of that
// agent in every tenant, while Session.get on each answered not_found.
func TestTenantPersonListsNothingOfAnotherTenantThroughAnAgentGrant(t *testing.T) {
	w := newLimitWorld(t, 1)
	ctx, rt := t.Context(), w.rts[0]
	var s models.Session
	if err := w.db.First(&s, "id = ?", w.session).Error; err != nil {
		t.Fatal(err)
	}
	acme := models.Tenant{ID: newID("ten"), Name: "acme", CreatedAt: time.Now()}
	globex := models.Tenant{ID: newID("ten"), Name: "globex", CreatedAt: time.Now()}
	for _, row := range []any{&acme, &globex} {
		if err := w.db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	w.db.Model(&models.Session{}).Where("id = ?", s.ID).Update("tenant_id", globex.ID)
	p, _ := seatedViewer(t, w, "acme-support@example.com",
		models.Permission{Verb: "Session.list", Scope: "agent:" + s.AgentID}, models.Permission{Verb: "Sandbox.list", Scope: "session:" + s.ID})
	w.db.Model(&models.User{}).Where("id = ?", p.ID).Update("tenant_id", acme.ID)
	rt.auth.reset()
	var u models.User
	w.db.First(&u, "id = ?", p.ID)
	p = rt.principalFor(ctx, u, "")
	if _, err := rt.SessionGet(ctx, p, s.ID); err == nil {
		t.Fatal("acme's person got globex's session")
	}
	for _, verb := range []string{"Session.list", "Sandbox.list", "Action.list", "Usage.get"} {
		if l := rt.listScope(p, verb); l.All || len(l.Agents) > 0 || len(l.Sessions) > 0 || len(l.Vaults) > 0 || slices.ContainsFunc(l.Tenants, func(t string) bool { return t != acme.ID }) {
			t.Errorf("acme's person's %s covers %+v, beyond acme", verb, l)
		}
	}
	page, err := rt.SessionListPage(ctx, p, SessionFilter{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		t.Errorf("acme's person lists globex's session %s (%s)", it.ID, it.Title)
	}
}

// A tenant's person seated by the operator in one of the operator's roles
// holds its permissions within their tenant, and never the operator's own
// verbs (OperatorOnlyVerbs), as their access level's preset does: seated in
// a role holding Agent.create on everything, acme's person made the
// operator's agents.
func TestTenantPersonSeatedInAnOperatorRoleHoldsItWithinTheirTenant(t *testing.T) {
	w := newLimitWorld(t, 1)
	ctx, rt := t.Context(), w.rts[0]
	acme := models.Tenant{ID: newID("ten"), Name: "acme", CreatedAt: time.Now()}
	if err := w.db.Create(&acme).Error; err != nil {
		t.Fatal(err)
	}
	p, _ := seatedViewer(t, w, "acme-ops@example.com", models.Permission{Verb: "Agent.create"}, models.Permission{Verb: "Vault.create"}, models.Permission{Verb: "Tenant.*"}, models.Permission{Verb: "User.*"})
	w.db.Model(&models.User{}).Where("id = ?", p.ID).Update("tenant_id", acme.ID)
	rt.auth.reset()
	var u models.User
	w.db.First(&u, "id = ?", p.ID)
	p = rt.principalFor(ctx, u, "")
	name := "not-theirs"
	if _, err := rt.AgentCreate(ctx, p, AgentInput{Name: &name}); err == nil {
		t.Fatal("acme's person made an agent of the operator's catalog")
	}
	for _, g := range p.Grants() {
		if g.Scope.Kind == "" || OperatorOnly(g.Verb) || g.Matches("Tenant.create") || g.Matches("User.grant_owner") {
			t.Errorf("acme's person holds %s", g)
		}
	}
	if !p.Can("User.invite") || !p.Can("Tenant.get") {
		t.Error("acme's person lost the role's User.invite and Tenant.get on their tenant")
	}
	v, err := rt.VaultCreate(ctx, p, VaultInput{Name: "acme-keys"})
	if err != nil || v.Tenant != acme.ID {
		t.Fatalf("acme's person's Vault.create from the role: %+v %v", v, err)
	}
}
