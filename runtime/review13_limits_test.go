package runtime

import (
	"strings"
	"testing"

	"github.com/subako/subako/models"
)

// A person holding a permission only under a limit (20 a day; only grant
// workbench) may not hand it out: with Role.create and Seat.create they made
// a role holding it without the limit (or with a fresh count of its own)
// and seated themselves in it.
func TestLimitedPermissionCannotBeHandedOutToEscapeItsLimit(t *testing.T) {
	w := newLimitWorld(t, 1)
	ctx, rt := t.Context(), w.rts[0]
	p, _ := seatedViewer(t, w, "lead@example.com",
		models.Permission{Verb: "Agent.create", LimitCount: 1, LimitPeriod: "day"},
		models.Permission{Verb: "Role.create"}, models.Permission{Verb: "Role.update"}, models.Permission{Verb: "Seat.create"})
	name := "first"
	if _, err := rt.AgentCreate(ctx, p, AgentInput{Name: &name}); err != nil {
		t.Fatalf("the day's one Agent.create: %v", err)
	}
	name = "second"
	if _, err := rt.AgentCreate(ctx, p, AgentInput{Name: &name}); err == nil {
		t.Fatal("a second Agent.create over 1 a day was allowed")
	}
	for _, unlimited := range []bool{true, false} {
		role := "escape"
		pi := PermissionInput{Verb: "Agent.create", Scope: "*"}
		if !unlimited {
			role, pi.LimitCount, pi.LimitPeriod = "escape-counted", 1, "day"
		}
		_, rerr := rt.RoleCreate(ctx, p, RoleInput{Name: &role, Permissions: &[]PermissionInput{pi}})
		_, serr := rt.SeatCreate(ctx, p, SeatInput{User: p.ID, Role: role})
		if rerr == nil && serr == nil {
			p = rt.principalFor(ctx, models.User{ID: p.ID, Email: p.Label, Access: p.Access}, "")
			name = "escaped-" + role
			_, err := rt.AgentCreate(ctx, p, AgentInput{Name: &name})
			t.Fatalf("holding Agent.create at 1 a day, they made role %s (%+v) and seated themselves; Agent.create again: %v", role, pi, err)
		}
		e, _ := AsError(serr)
		if rerr == nil && (e == nil || e.Code != "permission_denied" || !strings.Contains(e.Detail, "Agent.create")) {
			t.Errorf("seating in %s refused without naming Agent.create: %v", role, serr)
		}
	}
	// Nor put it, unlimited, into the role they are seated in.
	own, err := rt.RoleGet(ctx, p, "role-of-lead")
	if err != nil {
		t.Fatal(err)
	}
	perms := []PermissionInput{}
	for _, pv := range own.Permissions {
		perms = append(perms, pv.PermissionInput)
	}
	perms = append(perms, PermissionInput{Verb: "Agent.*", Scope: "*"})
	_, err = rt.RoleUpdate(ctx, p, RoleInput{Role: own.ID, Permissions: &perms})
	if e, _ := AsError(err); e == nil || e.Code != "permission_denied" {
		t.Fatalf("they added Agent.* to their own role: %v", err)
	}
	perms[len(perms)-1] = PermissionInput{Verb: "Agent.create", Scope: "*"}
	_, err = rt.RoleUpdate(ctx, p, RoleInput{Role: own.ID, Permissions: &perms})
	if e, _ := AsError(err); e == nil || e.Code != "permission_denied" || !strings.Contains(e.Detail, "Agent.create") {
		t.Fatalf("they added Agent.create, unlimited, to their own role (holding it at 1 a day): %v", err)
	}
}
