package web_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// roleWorld: an owner, a member bob with a token, and two vaults of the owner's.
type roleWorld struct {
	*env
	ownerBrowser *client
	owner, bob   string
	a, b         string // vault ids: customer-a, customer-b
}

func newRoleWorld(t *testing.T, opts runtime.Options) *roleWorld {
	t.Helper()
	e := &env{t: t, clock: &clock{now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)}}
	opts.Clock, opts.Log = e.clock, quiet
	e.serve(runtime.New(modelstest.Open(t), opts))
	owner := e.owner()
	w := &roleWorld{env: e, ownerBrowser: owner, owner: yearToken(owner), bob: yearToken(e.person(owner, "bob@example.com", "member"))}
	for _, name := range []string{"customer-a", "customer-b"} {
		var v struct{ ID string }
		if s := e.api(w.owner, "POST", "/vaults", map[string]any{"name": name}, &v); s != 201 {
			t.Fatalf("Vault.create: %d", s)
		}
		if name == "customer-a" {
			w.a = v.ID
		} else {
			w.b = v.ID
		}
	}
	return w
}

// yearToken is an API token that outlives the clock's jumps (a token made
// by a token lives no longer than it, so it is made in the browser).
func yearToken(b *client) string {
	b.e.t.Helper()
	_, page := b.submit("/tokens", url.Values{"name": {"year"}, "expires": {"365d"}})
	m := regexp.MustCompile(`sbk_[a-z0-9]+`).FindString(page)
	if m == "" {
		b.e.t.Fatalf("no token on the Tokens page:\n%s", page)
	}
	return m
}

// keeperRole is a role holding one vault: read it, set its credentials (5 a day).
func (w *roleWorld) keeperRole(decay int) runtime.RoleView {
	w.t.Helper()
	var role runtime.RoleView
	s := w.api(w.owner, "POST", "/roles", map[string]any{"name": "Vault keeper", "description": "keeps customer-a", "decay_days": decay,
		"permissions": []map[string]any{
			{"verb": "Vault.get", "scope": "vault:" + w.a},
			{"verb": "Credential.set", "scope": "vault:" + w.a, "limit_count": 5, "limit_period": "day"},
		}}, &role)
	if s != 201 {
		w.t.Fatalf("Role.create: %d", s)
	}
	return role
}

func (w *roleWorld) setCredential(token, vault string) (int, problem) {
	var p problem
	s := w.api(token, "PUT", "/vaults/"+vault+"/credentials", map[string]any{"prefix": "https://api.example.com/", "type": "bearer", "secret": "s3cret-value"}, &p)
	return s, p
}

func TestRolesAndSeatsThroughTheAPI(t *testing.T) {
	w := newRoleWorld(t, runtime.Options{})
	// A member holds no vault of another's.
	var p problem
	if s := w.api(w.bob, "GET", "/vaults/"+w.a, nil, &p); s != 403 || !strings.HasPrefix(p.MissingPermission, "Vault.get vault:") {
		t.Fatalf("bob reads customer-a before a seat: %d %+v", s, p)
	}
	// Bad roles are refused naming the field and the limit.
	for _, c := range []struct {
		body  map[string]any
		field string
		words string
	}{
		{map[string]any{"name": strings.Repeat("x", 65)}, "name", "at most 64"},
		{map[string]any{"name": "owner"}, "name", "built-in"},
		{map[string]any{"name": "r", "decay_days": 4000}, "decay_days", "3650"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Vault.fly"}}}, "permissions[0].verb", "not a verb"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Nothing.*"}}}, "permissions[0].verb", "no noun"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Vault.get", "scope": "vault:vlt_gone"}}}, "permissions[0].scope", "no vault"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Vault.get", "scope": "planet:x"}}}, "permissions[0].scope", "scope kind"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Vault.get", "limit_count": 2000000, "limit_period": "day"}}}, "permissions[0].limit_count", "1000000"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Vault.get", "limit_count": 3, "limit_period": "fortnight"}}}, "permissions[0].limit_period", "hour, day, week, month"},
		{map[string]any{"name": "r", "permissions": []map[string]any{{"verb": "Approval.approve", "limit_field": "grant"}}}, "permissions[0].limit_values", "at least one"},
	} {
		var p problem
		if s := w.api(w.owner, "POST", "/roles", c.body, &p); s != 422 || p.Field != c.field || !strings.Contains(p.Detail, c.words) {
			t.Errorf("Role.create %v: %d %+v, want 422 on %s saying %q", c.body, s, p, c.field, c.words)
		}
	}
	// A member may not make roles, nor seat people.
	if s := w.api(w.bob, "POST", "/roles", map[string]any{"name": "mine"}, &p); s != 403 || p.MissingPermission != "Role.create" {
		t.Fatalf("bob creates a role: %d %+v", s, p)
	}
	role := w.keeperRole(0)
	if len(role.Permissions) != 2 || role.Permissions[0].ScopeName != "vault:customer-a" || role.Permissions[0].LimitCount != 5 {
		t.Fatalf("Role.create answered %+v", role)
	}
	// The built-in levels are roles that cannot be edited.
	var roles []runtime.RoleView
	w.api(w.bob, "GET", "/roles", nil, &roles)
	// The five built-in levels (owner … viewer, none), then the roles.
	if len(roles) != 6 || !roles[0].BuiltIn || roles[0].Name != "owner" || roles[4].Name != "none" || roles[5].Name != "Vault keeper" {
		t.Fatalf("Role.list: %+v", roles)
	}
	if s := w.api(w.owner, "PATCH", "/roles/admin", map[string]any{"description": "x"}, &p); s != 409 || p.Code != "built_in_role" {
		t.Fatalf("Role.update admin: %d %+v", s, p)
	}

	// Seated, bob reaches customer-a (and only it) at once.
	var seat runtime.SeatView
	if s := w.api(w.owner, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": "Vault keeper"}, &seat); s != 201 {
		t.Fatalf("Seat.create: %d", s)
	}
	if s := w.api(w.owner, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": role.ID}, &p); s != 409 || p.Code != "already_seated" {
		t.Fatalf("Seat.create twice: %d %+v", s, p)
	}
	if s, p := w.setCredential(w.bob, w.a); s != 200 {
		t.Fatalf("seated bob sets customer-a's credential: %d %+v", s, p)
	}
	if s, p := w.setCredential(w.bob, w.b); s != 403 || p.MissingPermission != "Credential.set vault:customer-b" {
		t.Fatalf("seated bob sets customer-b's credential: %d %+v", s, p)
	}
	var seats []runtime.SeatView
	w.api(w.bob, "GET", "/seats?user=bob@example.com", nil, &seats)
	if len(seats) != 1 || seats[0].RoleName != "Vault keeper" {
		t.Fatalf("Seat.list: %+v", seats)
	}

	// A role changed: bob's seat follows from the next request.
	var upd runtime.RoleView
	if s := w.api(w.owner, "PATCH", "/roles/"+role.ID, map[string]any{"permissions": []map[string]any{{"verb": "Vault.get", "scope": "vault:" + w.a}}}, &upd); s != 200 || len(upd.Permissions) != 1 {
		t.Fatalf("Role.update: %d %+v", s, upd)
	}
	if s, _ := w.setCredential(w.bob, w.a); s != 403 {
		t.Fatalf("after Credential.set left the role bob sets it: %d", s)
	}
	// Every change is on the Changes list with before and after; undoing
	// the update gives Credential.set back.
	changes := roleChanges(w.env, w.bob)
	if len(changes) != 3 || changes[0].Kind != "role.update" || changes[1].Kind != "seat.create" || changes[2].Kind != "role.create" {
		t.Fatalf("Change.list: %+v", changes)
	}
	if !strings.Contains(string(changes[0].Before), "Credential.set") || strings.Contains(string(changes[0].After), "Credential.set") ||
		!strings.Contains(changes[0].Summary, "−Credential.set vault:") || changes[0].By != "owner@example.com" {
		t.Fatalf("role.update change: %+v", changes[0])
	}
	if s := w.api(w.bob, "POST", "/changes/"+changes[0].ID+"/undo", nil, &p); s != 403 || p.MissingPermission != "Change.undo" {
		t.Fatalf("a member undoes: %d %+v", s, p)
	}
	var undo runtime.ChangeView
	if s := w.api(w.owner, "POST", "/changes/"+changes[0].ID+"/undo", nil, &undo); s != 200 || undo.UndoOf != changes[0].ID {
		t.Fatalf("Change.undo: %d %+v", s, undo)
	}
	if s, p := w.setCredential(w.bob, w.a); s != 200 {
		t.Fatalf("after the undo bob sets customer-a's credential: %d %+v", s, p)
	}
	if s := w.api(w.owner, "POST", "/changes/"+changes[0].ID+"/undo", nil, &p); s != 409 || p.Code != "already_undone" {
		t.Fatalf("Change.undo twice: %d %+v", s, p)
	}

	// Unseated: refused from the very next request; undone: back.
	if s := w.api(w.owner, "DELETE", "/seats/"+seat.ID, nil, nil); s != 204 {
		t.Fatalf("Seat.delete: %d", s)
	}
	if s, p := w.setCredential(w.bob, w.a); s != 403 || p.MissingPermission != "Credential.set vault:customer-a" {
		t.Fatalf("unseated bob sets customer-a's credential: %d %+v", s, p)
	}
	w.api(w.owner, "GET", "/changes?kind=seat.delete", nil, &changes)
	if len(changes) != 1 || !strings.Contains(changes[0].Summary, "unseated bob@example.com from role Vault keeper") || len(changes[0].Before) == 0 {
		t.Fatalf("seat.delete change: %+v", changes)
	}
	if s := w.api(w.owner, "POST", "/changes/"+changes[0].ID+"/undo", nil, &undo); s != 200 {
		t.Fatalf("undo the unseating: %d", s)
	}
	if s, p := w.setCredential(w.bob, w.a); s != 200 {
		t.Fatalf("seated again bob sets customer-a's credential: %d %+v", s, p)
	}
	// Deleting the role ends its seats; the secret never shows in a Change.
	if s := w.api(w.owner, "DELETE", "/roles/"+role.ID, nil, nil); s != 204 {
		t.Fatalf("Role.delete: %d", s)
	}
	if s, _ := w.setCredential(w.bob, w.a); s != 403 {
		t.Fatalf("after Role.delete bob sets the credential: %d", s)
	}
	var raw json.RawMessage
	w.api(w.owner, "GET", "/changes?limit=200", nil, &raw)
	if strings.Contains(string(raw), "s3cret-value") {
		t.Fatal("a Change shows a credential's secret")
	}
	if s := w.api(w.owner, "GET", "/changes?limit=201", nil, &p); s != 422 || p.Field != "limit" {
		t.Fatalf("Change.list limit=201: %d %+v", s, p)
	}
}

// Decay with an injected clock: a seat's permission unused past the role's
// decay_days (or the server default) goes in the night's run, through a
// Change and an Action by the system; undone, it is back and works, and the
// next night does not take it again. The owner's access never decays.
func TestPermissionDecayThenUndo(t *testing.T) {
	w := newRoleWorld(t, runtime.Options{PermissionDecayDays: 30})
	role := w.keeperRole(3)
	var seat runtime.SeatView
	w.api(w.owner, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": role.ID}, &seat)
	if s, _ := w.setCredential(w.bob, w.a); s != 200 {
		t.Fatalf("bob uses Credential.set: %d", s)
	}
	ctx := t.Context()
	w.clock.Advance(2 * 24 * time.Hour)
	w.rt.Reap(ctx) // the night's run: nothing unused 3 days yet
	if s, p := w.setCredential(w.bob, w.a); s != 200 {
		t.Fatalf("after 2 days bob uses Credential.set: %d %+v", s, p)
	}
	// Vault.get was never used: 4 days after the seat it goes; Credential.set
	// (used 2 days ago) stays.
	w.clock.Advance(2 * 24 * time.Hour)
	w.rt.Reap(ctx)
	var p problem
	if s := w.api(w.bob, "GET", "/vaults/"+w.a, nil, &p); s != 403 || p.MissingPermission != "Vault.get vault:customer-a" {
		t.Fatalf("after decay bob reads customer-a: %d %+v", s, p)
	}
	if s, _ := w.setCredential(w.bob, w.a); s != 200 {
		t.Fatalf("the used permission decayed too: %d", s)
	}
	var changes []runtime.ChangeView
	w.api(w.owner, "GET", "/changes?kind=seat.decay", nil, &changes)
	if len(changes) != 1 || changes[0].ByKind != "system" || !changes[0].Undoable ||
		!strings.Contains(changes[0].Summary, "decay removed Vault.get vault:"+w.a+" from bob@example.com (role Vault keeper)") {
		t.Fatalf("decay's Change: %+v", changes)
	}
	var acts []runtime.ActionView
	w.api(w.owner, "GET", "/actions?verb=Seat.decay", nil, &acts)
	if len(acts) != 1 || acts[0].ByKind != "system" || !strings.Contains(acts[0].Reason, "never used") {
		t.Fatalf("decay's Action: %+v", acts)
	}
	// A second run the same night takes nothing more.
	if n, err := w.rt.DecayPermissions(ctx); err != nil || n != 0 {
		t.Fatalf("decay again: %d %v", n, err)
	}
	var seats []runtime.SeatView
	w.api(w.owner, "GET", "/seats", nil, &seats)
	if len(seats) != 1 || len(seats[0].Removed) != 1 || !strings.HasPrefix(seats[0].Removed[0], "Vault.get") {
		t.Fatalf("Seat.list after decay: %+v", seats)
	}
	// Undone by the owner: back and working, and it does not decay the next night.
	var undo runtime.ChangeView
	if s := w.api(w.owner, "POST", "/changes/"+changes[0].ID+"/undo", nil, &undo); s != 200 {
		t.Fatalf("undo decay: %d", s)
	}
	if s := w.api(w.bob, "GET", "/vaults/"+w.a, nil, nil); s != 200 {
		t.Fatalf("after the undo bob reads customer-a: %d", s)
	}
	w.clock.Advance(24 * time.Hour)
	w.rt.Reap(ctx)
	if s := w.api(w.bob, "GET", "/vaults/"+w.a, nil, nil); s != 200 {
		t.Fatalf("the night after the undo: %d", s)
	}
	// Unused 3 more days, both go; the owner's preset never does.
	w.clock.Advance(4 * 24 * time.Hour)
	w.rt.Reap(ctx)
	if s, _ := w.setCredential(w.bob, w.a); s != 403 {
		t.Fatalf("a week unused, bob still sets: %d", s)
	}
	if s, _ := w.setCredential(w.owner, w.a); s != 200 {
		t.Fatalf("the owner after decay: %d", s)
	}
	// A role with decay 0 follows the server's default (30 days).
	var other runtime.RoleView
	w.api(w.owner, "POST", "/roles", map[string]any{"name": "reader", "permissions": []map[string]any{{"verb": "Vault.get", "scope": "vault:" + w.b}}}, &other)
	w.api(w.owner, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": "reader"}, nil)
	w.clock.Advance(29 * 24 * time.Hour)
	w.rt.Reap(ctx)
	w.api(w.owner, "GET", "/seats?role=reader", nil, &seats)
	if len(seats) != 1 || len(seats[0].Removed) != 0 {
		t.Fatalf("29 days into a 30-day default: %+v", seats)
	}
	w.clock.Advance(2 * 24 * time.Hour)
	w.rt.Reap(ctx)
	if s := w.api(w.bob, "GET", "/vaults/"+w.b, nil, nil); s != 403 {
		t.Fatalf("31 days into a 30-day default: %d", s)
	}
}

// roleChanges are the Changes but tokens', vaults' and people's (the test's
// own tokens and vaults make some).
func roleChanges(e *env, token string) []runtime.ChangeView {
	var all, out []runtime.ChangeView
	e.api(token, "GET", "/changes", nil, &all)
	for _, c := range all {
		if !strings.HasPrefix(c.Kind, "token.") && !strings.HasPrefix(c.Kind, "vault.") && !strings.HasPrefix(c.Kind, "user.") {
			out = append(out, c)
		}
	}
	return out
}

// A tenant's admin makes and sees their own tenant's roles, seats and
// Changes and nothing of the operator's: another's role or seat is not found.
func TestTenantRolesAreTheTenants(t *testing.T) {
	w := newRoleWorld(t, runtime.Options{})
	var ten struct{ ID string }
	if s := w.api(w.owner, "POST", "/tenants", map[string]any{"name": "acme"}, &ten); s != 201 {
		t.Fatalf("Tenant.create: %d", s)
	}
	var acmeVault struct{ ID string }
	if s := w.api(w.owner, "POST", "/vaults", map[string]any{"name": "acme-keys", "tenant": "acme"}, &acmeVault); s != 201 {
		t.Fatalf("Vault.create in acme: %d", s)
	}
	invite := func(email, access string) string {
		_, page := w.ownerBrowser.submit("/people/invite", url.Values{"email": {email}, "access": {access}, "tenant": {"acme"}})
		m := inviteLink.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no invitation link:\n%s", page)
		}
		b := w.browser()
		b.post("/invite/"+m[1], url.Values{"password": {password}})
		return yearToken(b)
	}
	admin := invite("admin@acme.example", "admin")
	invite("ann@acme.example", "member")
	operatorRole := w.keeperRole(0)
	w.api(w.owner, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": operatorRole.ID}, nil)

	var roles []runtime.RoleView
	w.api(admin, "GET", "/roles", nil, &roles)
	if len(roles) != len(runtime.AccessLevels) {
		t.Fatalf("acme's admin lists roles: %+v", roles)
	}
	var p problem
	if s := w.api(admin, "GET", "/roles/"+operatorRole.ID, nil, &p); s != 404 {
		t.Fatalf("acme's admin reads the operator's role: %d %+v", s, p)
	}
	var mine runtime.RoleView
	if s := w.api(admin, "POST", "/roles", map[string]any{"name": "Vault keeper", "permissions": []map[string]any{{"verb": "Credential.set", "scope": "vault:" + acmeVault.ID}}}, &mine); s != 201 {
		t.Fatalf("acme's admin makes a role of the operator's role's name: %d", s)
	}
	if s := w.api(admin, "POST", "/roles", map[string]any{"name": "grab", "permissions": []map[string]any{{"verb": "Credential.set", "scope": "vault:" + w.a}}}, &p); s != 403 || p.Code != "permission_denied" {
		t.Fatalf("acme's admin puts the operator's vault in a role: %d %+v", s, p)
	}
	if s := w.api(admin, "POST", "/seats", map[string]any{"user": "bob@example.com", "role": mine.ID}, &p); s != 404 {
		t.Fatalf("acme's admin seats the operator's person: %d %+v", s, p)
	}
	if s := w.api(admin, "POST", "/seats", map[string]any{"user": "ann@acme.example", "role": mine.ID}, nil); s != 201 {
		t.Fatalf("acme's admin seats ann: %d", s)
	}
	var seats []runtime.SeatView
	w.api(admin, "GET", "/seats", nil, &seats)
	if len(seats) != 1 || seats[0].Email != "ann@acme.example" {
		t.Fatalf("acme's admin lists seats: %+v", seats)
	}
	w.api(w.owner, "GET", "/seats?user=bob@example.com", nil, &seats)
	if s := w.api(admin, "DELETE", "/seats/"+seats[0].ID, nil, &p); s != 404 {
		t.Fatalf("acme's admin unseats bob: %d", s)
	}
	changes := roleChanges(w.env, admin)
	if len(changes) != 2 || changes[0].Kind != "seat.create" || changes[1].Kind != "role.create" || changes[1].By != "admin@acme.example" {
		t.Fatalf("acme's admin lists Changes: %+v", changes)
	}
	ops := roleChanges(w.env, w.owner)
	if s := w.api(admin, "POST", "/changes/"+ops[len(ops)-1].ID+"/undo", nil, &p); s != 404 {
		t.Fatalf("acme's admin undoes the operator's change: %d %+v", s, p)
	}
}

// The console's role forms: a refused form shows the error naming the field
// and keeps what was typed; a permission is added and removed on the role's
// page; the Changes page's Undo puts it back.
func TestRoleConsoleForms(t *testing.T) {
	w := newRoleWorld(t, runtime.Options{})
	b := w.ownerBrowser
	resp, page := b.submit("/roles", url.Values{"name": {"Keeper"}, "verb": {"Vault.get"}, "scope": {"vault:vlt_nowhere"}, "limit_count": {"5"}, "limit_period": {"day"}})
	if resp.StatusCode != 422 || !strings.Contains(page, "permissions[0].scope") || !strings.Contains(page, `value="Keeper"`) {
		t.Fatalf("a bad scope on the Roles page: %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.submit("/roles", url.Values{"name": {"Keeper"}, "verb": {"Vault.get"}, "scope": {"vault:" + w.a}, "limit_count": {"5"}, "limit_period": {"day"}})
	if resp.StatusCode != 200 || !strings.Contains(page, "vault:customer-a") || !strings.Contains(page, "5 a day") {
		t.Fatalf("the role's page after creating it: %d\n%s", resp.StatusCode, page)
	}
	var role runtime.RoleView
	w.api(w.owner, "GET", "/roles/Keeper", nil, &role)
	_, page = b.submit("/roles/"+role.ID+"/permissions", url.Values{"verb": {"Credential.set", "Credential.list"}, "scope": {"vault:" + w.a}})
	if strings.Count(page, `data-testid="permission-row"`) != 3 {
		t.Fatalf("after adding two permissions:\n%s", page)
	}
	w.api(w.owner, "GET", "/roles/Keeper", nil, &role)
	_, page = b.submit("/roles/"+role.ID+"/permissions/"+role.Permissions[0].ID+"/remove", url.Values{})
	if strings.Count(page, `data-testid="permission-row"`) != 2 {
		t.Fatalf("after removing one:\n%s", page)
	}
	_, page = b.get("/changes")
	if !strings.Contains(page, "−Credential.list vault:") || !strings.Contains(page, "Undo") {
		t.Fatalf("the Changes page:\n%s", page)
	}
	changes := roleChanges(w.env, w.owner)
	_, page = b.submit("/changes/"+changes[0].ID+"/undo", url.Values{})
	if !strings.Contains(page, "Undone: changed role Keeper") || !strings.Contains(page, "undone by owner@example.com") {
		t.Fatalf("after Undo:\n%s", page)
	}
	w.api(w.owner, "GET", "/roles/Keeper", nil, &role)
	if len(role.Permissions) != 3 {
		t.Fatalf("after the undo the role holds %+v", role.Permissions)
	}
	// A member sees the Roles page without its forms.
	bob := w.browser()
	bob.post("/login", url.Values{"email": {"bob@example.com"}, "password": {password}})
	if _, page = bob.get("/roles"); strings.Contains(page, `data-testid="role-create"`) || !strings.Contains(page, "Keeper") {
		t.Fatalf("bob's Roles page:\n%s", page)
	}
}
