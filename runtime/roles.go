package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// Roles are named sets of permissions (seed 004); people fill them through
// seats (seats.go). The access levels owner, admin, member and viewer are
// shown as built-in roles that cannot be edited.

// Bounds of a role.
const (
	MaxRoleName        = 64
	MaxRoleDescription = 500
	MaxRolePermissions = 200
	MaxDecayDays       = 3650
	MaxLimitCount      = 1_000_000
	MaxLimitField      = 64
	MaxLimitValues     = 50
	MaxLimitValue      = 200
	MaxLimitSpendSC    = 1_000_000
	// MaxRoles bounds the roles of one installation.
	MaxRoles = 500
)

// LimitPeriods are the periods a count limit may run over.
func LimitPeriods() []string { return slices.Clone(limitPeriods) }

// PermissionInput is one permission of a role as a caller writes it.
type PermissionInput struct {
	Verb  string `json:"verb" form:"verb"`
	Scope string `json:"scope" form:"scope"` // "*" (or empty), tenant:<id>, agent:<id>, vault:<id>, session:<id>
	// Limit (zero: none): a count per period, an input ceiling, a spend ceiling.
	LimitCount   int      `json:"limit_count,omitempty"`
	LimitPeriod  string   `json:"limit_period,omitempty"`
	LimitField   string   `json:"limit_field,omitempty"`
	LimitValues  []string `json:"limit_values,omitempty"`
	LimitSpendSC float64  `json:"limit_spend_sc,omitempty"`
}

// PermissionView is one permission as interfaces show it; ScopeName names
// the scope's noun (vault:customer-a) where it has a name.
type PermissionView struct {
	ID string `json:"id,omitempty"`
	PermissionInput
	ScopeName  string     `json:"scope_name"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// String is the permission as one line: "Vault.use vault:customer-a (20 a day)".
func (v PermissionView) String() string {
	s := v.Verb + " " + v.ScopeName
	if l := limitText(v.PermissionInput); l != "" {
		s += " (" + l + ")"
	}
	return s
}

func limitText(in PermissionInput) string {
	return Limit{Count: in.LimitCount, Period: in.LimitPeriod, Field: in.LimitField, Values: in.LimitValues, SpendSC: in.LimitSpendSC}.String()
}

// RoleView is a role as interfaces show it.
type RoleView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// DecayDays: a seat's permission unused this many days is removed each
	// night (0: the server's --permission-decay).
	DecayDays int `json:"decay_days"`
	// BuiltIn marks the access levels, shown as roles; they cannot be edited.
	BuiltIn     bool             `json:"built_in"`
	Permissions []PermissionView `json:"permissions"`
	Seats       int              `json:"seats"`
	CreatedAt   time.Time        `json:"created_at,omitzero"`
	UpdatedAt   time.Time        `json:"updated_at,omitzero"`
}

// RoleInput creates or changes a role; nil fields of an update stay.
type RoleInput struct {
	Role        string             `json:"-" param:"role"`
	Name        *string            `json:"name"`
	Description *string            `json:"description"`
	DecayDays   *int               `json:"decay_days"`
	Permissions *[]PermissionInput `json:"permissions"`
}

// presetRole is an access level shown as a role.
func presetRole(level string) RoleView {
	v := RoleView{ID: level, Name: level, BuiltIn: true, Permissions: []PermissionView{},
		Description: "built-in access level: " + presetText[level]}
	for _, verb := range Permissions(level) {
		v.Permissions = append(v.Permissions, PermissionView{PermissionInput: PermissionInput{Verb: verb, Scope: "*"}, ScopeName: "*"})
	}
	return v
}

var presetText = map[string]string{
	AccessOwner:  "everything, and naming other owners",
	AccessAdmin:  "everything but naming owners: people, roles, archives, channels",
	AccessMember: "builds and runs agents",
	AccessViewer: "reads, and their own API tokens",
}

func isPreset(name string) bool {
	return slices.Contains(AccessLevels, strings.ToLower(strings.TrimSpace(name)))
}

// RoleList is Role.list: the built-in access levels, then the roles by name.
func (r *Runtime) RoleList(ctx context.Context, p Principal) ([]RoleView, error) {
	var out []RoleView
	err := r.run(ctx, p, "Role.list", func(a *act) error {
		for _, l := range AccessLevels {
			out = append(out, presetRole(l))
		}
		var roles []models.Role
		if err := r.db.WithContext(ctx).Where("tenant_id = ?", p.TenantID).Order("name").Limit(MaxRoles).Find(&roles).Error; err != nil {
			return fmt.Errorf("runtime: list roles: %w", err)
		}
		views, err := r.roleViews(ctx, r.db.DB, roles)
		out = append(out, views...)
		return err
	})
	return out, err
}

// RoleGet is Role.get, by id or name (a built-in level by its name).
func (r *Runtime) RoleGet(ctx context.Context, p Principal, id string) (RoleView, error) {
	var out RoleView
	err := r.run(ctx, p, "Role.get", func(a *act) error {
		if isPreset(id) {
			out = presetRole(strings.ToLower(strings.TrimSpace(id)))
			return nil
		}
		role, err := findRole(r.db.WithContext(ctx), p, id)
		if err != nil {
			return err
		}
		views, err := r.roleViews(ctx, r.db.DB, []models.Role{role})
		if err == nil {
			out = views[0]
		}
		return err
	}, id)
	return out, err
}

// findRole finds a role of p's tenant (the operator's for the operator's
// people) by id or name; another tenant's is not found.
func findRole(tx *gorm.DB, p Principal, id string) (models.Role, error) {
	var role models.Role
	err := tx.Where("tenant_id = ?", p.TenantID).First(&role, "id = ? OR name = ?", id, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return role, notFound("role", id)
	}
	return role, err
}

// RoleCreate is Role.create. Whoever creates a role must hold each of its
// permissions themselves: nobody hands out more than they have.
func (r *Runtime) RoleCreate(ctx context.Context, p Principal, in RoleInput) (RoleView, error) {
	var out RoleView
	err := r.run(ctx, p, "Role.create", func(a *act) error {
		if in.Name == nil {
			return invalid("name", "name_required", "name is required")
		}
		role := models.Role{ID: newID("role"), TenantID: p.TenantID, CreatedBy: p.ID, CreatedAt: r.now(), UpdatedAt: r.now()}
		perms, err := r.applyRoleInput(ctx, p, &role, in)
		if err != nil {
			return err
		}
		a.target(role.ID)
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var n int64
			if err := tx.Model(&models.Role{}).Where("tenant_id = ?", role.TenantID).Count(&n).Error; err != nil {
				return err
			}
			if n >= MaxRoles {
				return conflict("too_many_roles", fmt.Sprintf("at most %d roles (a tenant's own, or the operator's)", MaxRoles))
			}
			if err := uniqueRoleName(tx, role); err != nil {
				return err
			}
			if err := tx.Create(&role).Error; err != nil {
				return err
			}
			rows, err := createRolePermissions(tx, role, perms, p.ID, r.now())
			if err != nil {
				return err
			}
			views, err := r.roleViews(ctx, tx, []models.Role{role})
			if err != nil {
				return err
			}
			out = views[0]
			return r.recordChange(ctx, tx, p, ChangeRoleCreate, role.ID, "created role "+role.Name+" ("+countText(len(perms), "permission")+")", nil, roleSnapshot{Role: role, Permissions: rows})
		})
		return err
	})
	return out, err
}

// RoleUpdate is Role.update: its name, description, decay, and (when given)
// its whole list of permissions. Seats follow at once.
func (r *Runtime) RoleUpdate(ctx context.Context, p Principal, in RoleInput) (RoleView, error) {
	var out RoleView
	err := r.run(ctx, p, "Role.update", func(a *act) error {
		if isPreset(in.Role) {
			return builtInRole(in.Role)
		}
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			role, err := findRole(tx.Clauses(clause.Locking{Strength: "UPDATE"}), p, in.Role)
			if err != nil {
				return err
			}
			a.target(role.ID)
			before, err := loadRoleSnapshot(tx, role)
			if err != nil {
				return err
			}
			perms, err := r.applyRoleInput(ctx, p, &role, in)
			if err != nil {
				return err
			}
			if err := uniqueRoleName(tx, role); err != nil {
				return err
			}
			role.UpdatedAt = r.now()
			if err := saveRole(tx, role); err != nil {
				return err
			}
			after := roleSnapshot{Role: role, Permissions: before.Permissions}
			if in.Permissions != nil {
				after.Permissions, err = replaceRolePermissions(tx, role, before.Permissions, perms, p.ID, r.now())
				if err != nil {
					return err
				}
			}
			views, err := r.roleViews(ctx, tx, []models.Role{role})
			if err != nil {
				return err
			}
			out = views[0]
			return r.recordChange(ctx, tx, p, ChangeRoleUpdate, role.ID, "changed role "+role.Name+": "+roleDiffText(before, after), before, after)
		})
		r.auth.reset() // committed: seats act with the new permissions from the next request
		return err
	}, in.Role)
	return out, err
}

// RoleDelete is Role.delete: its seats go with it (recorded in the Change,
// so an undo brings them back).
func (r *Runtime) RoleDelete(ctx context.Context, p Principal, id string) error {
	return r.run(ctx, p, "Role.delete", func(a *act) error {
		if isPreset(id) {
			return builtInRole(id)
		}
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			role, err := findRole(tx.Clauses(clause.Locking{Strength: "UPDATE"}), p, id)
			if err != nil {
				return err
			}
			a.target(role.ID)
			before, err := loadRoleSnapshot(tx, role)
			if err != nil {
				return err
			}
			if err := deleteRole(tx, role.ID); err != nil {
				return err
			}
			return r.recordChange(ctx, tx, p, ChangeRoleDelete, role.ID,
				fmt.Sprintf("deleted role %s (%s, %s)", role.Name, countText(len(before.Permissions), "permission"), countText(len(before.Seats), "seat")), before, nil)
		})
		r.auth.reset() // committed: its seats end from the next request
		return err
	}, id)
}

// saveRole writes a role's name, description, decay and time of change.
func saveRole(tx *gorm.DB, role models.Role) error {
	return tx.Model(&models.Role{}).Where("id = ?", role.ID).
		Updates(map[string]any{"name": role.Name, "description": role.Description, "decay_days": role.DecayDays, "updated_at": role.UpdatedAt}).Error
}

func deleteRole(tx *gorm.DB, id string) error {
	var seats []string
	if err := tx.Model(&models.Seat{}).Where("role_id = ?", id).Pluck("id", &seats).Error; err != nil {
		return err
	}
	if len(seats) > 0 {
		if err := tx.Where("seat_id IN ?", seats).Delete(&models.SeatPermission{}).Error; err != nil {
			return err
		}
		if err := tx.Where("role_id = ?", id).Delete(&models.Seat{}).Error; err != nil {
			return err
		}
	}
	if err := tx.Where("holder_kind = ? AND holder_id = ?", models.HolderRole, id).Delete(&models.Permission{}).Error; err != nil {
		return err
	}
	return tx.Where("id = ?", id).Delete(&models.Role{}).Error
}

func builtInRole(name string) error {
	return conflict("built_in_role", fmt.Sprintf("%s is a built-in access level and cannot be edited or deleted: change a person's access on the People page", strings.TrimSpace(name)))
}

func countText(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// roleSnapshot is what a role is, as a Change's before and after: enough to
// put it back.
type roleSnapshot struct {
	Role        models.Role             `json:"role"`
	Permissions []models.Permission     `json:"permissions"`
	Seats       []models.Seat           `json:"seats,omitempty"`
	SeatPerms   []models.SeatPermission `json:"seat_permissions,omitempty"`
}

func loadRoleSnapshot(tx *gorm.DB, role models.Role) (roleSnapshot, error) {
	s := roleSnapshot{Role: role}
	if err := tx.Where("holder_kind = ? AND holder_id = ?", models.HolderRole, role.ID).Order("created_at, id").Find(&s.Permissions).Error; err != nil {
		return s, err
	}
	if err := tx.Where("role_id = ?", role.ID).Order("created_at, id").Find(&s.Seats).Error; err != nil {
		return s, err
	}
	if len(s.Seats) > 0 {
		ids := make([]string, len(s.Seats))
		for i, st := range s.Seats {
			ids[i] = st.ID
		}
		if err := tx.Where("seat_id IN ?", ids).Find(&s.SeatPerms).Error; err != nil {
			return s, err
		}
	}
	return s, nil
}

func roleDiffText(before, after roleSnapshot) string {
	var parts []string
	if before.Role.Name != after.Role.Name {
		parts = append(parts, fmt.Sprintf("name %s → %s", before.Role.Name, after.Role.Name))
	}
	if before.Role.Description != after.Role.Description {
		parts = append(parts, "description")
	}
	if before.Role.DecayDays != after.Role.DecayDays {
		parts = append(parts, fmt.Sprintf("decay %d → %d days", before.Role.DecayDays, after.Role.DecayDays))
	}
	key := func(p models.Permission) string { return permKey(permInput(p)) }
	had := map[string]bool{}
	for _, p := range before.Permissions {
		had[key(p)] = true
	}
	has := map[string]bool{}
	for _, p := range after.Permissions {
		has[key(p)] = true
		if !had[key(p)] {
			parts = append(parts, "+"+p.Verb+" "+p.Scope)
		}
	}
	for _, p := range before.Permissions {
		if !has[key(p)] {
			parts = append(parts, "−"+p.Verb+" "+p.Scope)
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func uniqueRoleName(tx *gorm.DB, role models.Role) error {
	var n int64
	if err := tx.Model(&models.Role{}).Where("tenant_id = ? AND name = ? AND id <> ?", role.TenantID, role.Name, role.ID).Count(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return &Error{Kind: KindConflict, Code: "role_exists", Title: "Conflict", Field: "name", Detail: fmt.Sprintf("a role named %q already exists", role.Name)}
	}
	return nil
}

// applyRoleInput checks in and sets role's fields; it returns the checked
// permissions when in gives them.
func (r *Runtime) applyRoleInput(ctx context.Context, p Principal, role *models.Role, in RoleInput) ([]PermissionInput, error) {
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		switch {
		case name == "":
			return nil, invalid("name", "name_required", "name is required")
		case utf8.RuneCountInString(name) > MaxRoleName:
			return nil, invalid("name", "name_too_long", fmt.Sprintf("name must be at most %d characters", MaxRoleName))
		case isPreset(name):
			return nil, invalid("name", "name_reserved", fmt.Sprintf("%s is a built-in access level; name the role otherwise", name))
		case strings.ContainsFunc(name, func(c rune) bool { return c < ' ' }):
			return nil, invalid("name", "invalid_name", "name must not hold control characters")
		}
		role.Name = name
	}
	if in.Description != nil {
		d := strings.TrimSpace(*in.Description)
		if utf8.RuneCountInString(d) > MaxRoleDescription {
			return nil, invalid("description", "description_too_long", fmt.Sprintf("description must be at most %d characters", MaxRoleDescription))
		}
		role.Description = d
	}
	if in.DecayDays != nil {
		if *in.DecayDays < 0 || *in.DecayDays > MaxDecayDays {
			return nil, invalid("decay_days", "invalid_decay_days", fmt.Sprintf("decay_days must be from 0 (the server default) to %d, not %d", MaxDecayDays, *in.DecayDays))
		}
		role.DecayDays = *in.DecayDays
	}
	if in.Permissions == nil {
		return nil, nil
	}
	return r.checkPermissions(ctx, p, *in.Permissions)
}

// checkPermissions validates a list of permissions and that p may grant each.
func (r *Runtime) checkPermissions(ctx context.Context, p Principal, in []PermissionInput) ([]PermissionInput, error) {
	if len(in) > MaxRolePermissions {
		return nil, invalid("permissions", "too_many_permissions", fmt.Sprintf("a role holds at most %d permissions, not %d", MaxRolePermissions, len(in)))
	}
	verbs := AllVerbs()
	nouns := map[string]bool{}
	for _, v := range verbs {
		n, _, _ := strings.Cut(v, ".")
		nouns[n] = true
	}
	seen := map[string]int{}
	out := make([]PermissionInput, 0, len(in))
	for i, pi := range in {
		f := fmt.Sprintf("permissions[%d]", i)
		pi.Verb = strings.TrimSpace(pi.Verb)
		noun, verb, _ := strings.Cut(pi.Verb, ".")
		switch {
		case pi.Verb == "":
			return nil, invalid(f+".verb", "verb_required", f+".verb is required (Noun.verb or Noun.*)")
		case len(pi.Verb) > 100:
			return nil, invalid(f+".verb", "unknown_verb", f+".verb must be at most 100 characters")
		case verb == "*" && !nouns[noun]:
			return nil, invalid(f+".verb", "unknown_verb", fmt.Sprintf("%s.verb: %q names no noun Subako has", f, noun))
		case verb != "*" && !slices.Contains(verbs, pi.Verb):
			return nil, invalid(f+".verb", "unknown_verb", fmt.Sprintf("%s.verb: %q is not a verb (see Role.list or docs/permissions.md)", f, pi.Verb))
		}
		sc := strings.TrimSpace(pi.Scope)
		if sc == "" {
			sc = "*"
		}
		scope, err := ParseScope(sc)
		if e, ok := AsError(err); ok {
			return nil, invalid(f+".scope", "invalid_scope", fmt.Sprintf("%s.scope: %s", f, e.Detail))
		} else if err != nil {
			return nil, err
		}
		scope = r.scopeByName(ctx, scope)
		if err := r.scopeExists(ctx, scope); err != nil {
			return nil, invalid(f+".scope", "unknown_scope", fmt.Sprintf("%s.scope: %v", f, err))
		}
		pi.Scope = scope.String()
		if err := checkLimit(f, &pi); err != nil {
			return nil, err
		}
		if j, dup := seen[pi.Verb+" "+pi.Scope]; dup {
			return nil, invalid(f, "duplicate_permission", fmt.Sprintf("%s repeats permissions[%d] (%s %s)", f, j, pi.Verb, pi.Scope))
		}
		seen[pi.Verb+" "+pi.Scope] = i
		if !r.mayGrant(ctx, p, pi.Verb, scope) {
			return nil, &Error{Kind: KindForbidden, Code: "permission_denied", Title: "Permission denied", Field: f,
				MissingPermission: pi.Verb + " " + pi.Scope,
				Detail:            fmt.Sprintf("%s: you may not grant %s %s, which you do not hold yourself", f, pi.Verb, pi.Scope)}
		}
		out = append(out, pi)
	}
	return out, nil
}

func checkLimit(f string, pi *PermissionInput) error {
	pi.LimitPeriod = strings.TrimSpace(pi.LimitPeriod)
	pi.LimitField = strings.TrimSpace(pi.LimitField)
	switch {
	case pi.LimitCount < 0 || pi.LimitCount > MaxLimitCount:
		return invalid(f+".limit_count", "invalid_limit", fmt.Sprintf("%s.limit_count must be from 0 (none) to %d, not %d", f, MaxLimitCount, pi.LimitCount))
	case pi.LimitCount > 0 && !slices.Contains(limitPeriods, pi.LimitPeriod):
		return invalid(f+".limit_period", "invalid_limit", fmt.Sprintf("%s.limit_period must be one of hour, day, week, month, not %q", f, pi.LimitPeriod))
	case pi.LimitCount == 0 && pi.LimitPeriod != "":
		pi.LimitPeriod = ""
	}
	if len(pi.LimitField) > MaxLimitField {
		return invalid(f+".limit_field", "invalid_limit", fmt.Sprintf("%s.limit_field must be at most %d characters", f, MaxLimitField))
	}
	var vals []string
	for _, v := range pi.LimitValues {
		if v = strings.TrimSpace(v); v != "" {
			vals = append(vals, v)
		}
	}
	switch {
	case len(vals) > MaxLimitValues:
		return invalid(f+".limit_values", "invalid_limit", fmt.Sprintf("%s.limit_values holds at most %d values, not %d", f, MaxLimitValues, len(vals)))
	case pi.LimitField != "" && len(vals) == 0:
		return invalid(f+".limit_values", "invalid_limit", fmt.Sprintf("%s.limit_values must name at least one allowed value of %s", f, pi.LimitField))
	case pi.LimitField == "" && len(vals) > 0:
		return invalid(f+".limit_field", "invalid_limit", fmt.Sprintf("%s.limit_field must name the input that limit_values bound", f))
	}
	for _, v := range vals {
		if len(v) > MaxLimitValue {
			return invalid(f+".limit_values", "invalid_limit", fmt.Sprintf("%s.limit_values: each value must be at most %d bytes", f, MaxLimitValue))
		}
	}
	pi.LimitValues = vals
	if pi.LimitSpendSC < 0 || pi.LimitSpendSC > MaxLimitSpendSC || pi.LimitSpendSC != pi.LimitSpendSC {
		return invalid(f+".limit_spend_sc", "invalid_limit", fmt.Sprintf("%s.limit_spend_sc must be from 0 (none) to %d SC a day", f, MaxLimitSpendSC))
	}
	return nil
}

// scopeExists checks that a scope names a noun that exists.
func (r *Runtime) scopeExists(ctx context.Context, s Scope) error {
	var table string
	switch s.Kind {
	case "":
		return nil
	case "tenant":
		table = "tenants"
	case "agent":
		table = "agents"
	case "vault":
		table = "vaults"
	case "session":
		table = "sessions"
	default:
		return fmt.Errorf("unknown scope kind %q", s.Kind)
	}
	var n int64
	if err := r.db.WithContext(ctx).Table(table).Where("id = ?", s.ID).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no %s %q", s.Kind, s.ID)
	}
	return nil
}

// mayGrant reports whether p holds verb, without a limit, on a scope covering
// s: only then may p put it in a role, seat someone in a role holding it, or
// undo its decay.
func (r *Runtime) mayGrant(ctx context.Context, p Principal, verb string, s Scope) bool {
	noun, _, _ := strings.Cut(verb, ".")
	for _, g := range p.Grants() {
		if g.Verb != verb && g.Verb != noun+".*" {
			continue
		}
		if !g.Limit.IsZero() {
			// Held under a limit only: handing it on (even with the same
			// limit, counted afresh on the new permission) would be more.
			continue
		}
		if r.scopeCovers(ctx, g.Scope, s) {
			return true
		}
	}
	return false
}

// scopeCovers reports whether a grant's scope covers a whole other scope.
func (r *Runtime) scopeCovers(ctx context.Context, outer, inner Scope) bool {
	switch {
	case outer.Kind == "":
		return true
	case outer == inner:
		return true
	case inner.Kind == "":
		return false
	case outer.Kind == "tenant" && (inner.Kind == "vault" || inner.Kind == "session"):
		var tenant []string
		r.db.WithContext(ctx).Table(inner.Kind+"s").Where("id = ?", inner.ID).Pluck("tenant_id", &tenant)
		return len(tenant) == 1 && tenant[0] == outer.ID
	case outer.Kind == "agent" && inner.Kind == "session":
		var agent []string
		r.db.WithContext(ctx).Table("sessions").Where("id = ?", inner.ID).Pluck("agent_id", &agent)
		return len(agent) == 1 && agent[0] == outer.ID
	}
	return false
}

func permKey(p PermissionInput) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func permInput(p models.Permission) PermissionInput {
	in := PermissionInput{Verb: p.Verb, Scope: p.Scope, LimitCount: p.LimitCount, LimitPeriod: p.LimitPeriod,
		LimitField: p.LimitField, LimitSpendSC: p.LimitSpendSC}
	if p.LimitValues != "" {
		_ = json.Unmarshal([]byte(p.LimitValues), &in.LimitValues)
	}
	if len(in.LimitValues) == 0 {
		in.LimitValues = nil
	}
	return in
}

func permRow(role models.Role, in PermissionInput, by string, now time.Time) models.Permission {
	p := models.Permission{ID: newID("perm"), HolderKind: models.HolderRole, HolderID: role.ID, Verb: in.Verb, Scope: in.Scope,
		LimitCount: in.LimitCount, LimitPeriod: in.LimitPeriod, LimitField: in.LimitField, LimitSpendSC: in.LimitSpendSC,
		CreatedBy: by, CreatedAt: now}
	if len(in.LimitValues) > 0 {
		b, _ := json.Marshal(in.LimitValues)
		p.LimitValues = string(b)
	}
	return p
}

func createRolePermissions(tx *gorm.DB, role models.Role, in []PermissionInput, by string, now time.Time) ([]models.Permission, error) {
	rows := make([]models.Permission, len(in))
	for i, pi := range in {
		rows[i] = permRow(role, pi, by, now)
	}
	if len(rows) == 0 {
		return rows, nil
	}
	return rows, tx.Create(&rows).Error
}

// replaceRolePermissions makes the role hold exactly in: a permission that
// stays the same keeps its row (its id, and its seats' use and decay).
func replaceRolePermissions(tx *gorm.DB, role models.Role, had []models.Permission, in []PermissionInput, by string, now time.Time) ([]models.Permission, error) {
	old := map[string]models.Permission{}
	for _, p := range had {
		old[permKey(permInput(p))] = p
	}
	var keep []models.Permission
	var add []models.Permission
	kept := map[string]bool{}
	for _, pi := range in {
		if p, ok := old[permKey(pi)]; ok && !kept[p.ID] {
			keep = append(keep, p)
			kept[p.ID] = true
			continue
		}
		add = append(add, permRow(role, pi, by, now))
	}
	var gone []string
	for _, p := range had {
		if !kept[p.ID] {
			gone = append(gone, p.ID)
		}
	}
	if err := changeRolePermissions(tx, role.ID, gone, add); err != nil {
		return nil, err
	}
	return append(keep, add...), nil
}

// changeRolePermissions deletes a role's permissions gone (and their seats'
// rows) and adds add (with rows for every seat).
func changeRolePermissions(tx *gorm.DB, roleID string, gone []string, add []models.Permission) error {
	if len(gone) > 0 {
		if err := tx.Where("id IN ?", gone).Delete(&models.Permission{}).Error; err != nil {
			return err
		}
		if err := tx.Where("permission_id IN ?", gone).Delete(&models.SeatPermission{}).Error; err != nil {
			return err
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := tx.Create(&add).Error; err != nil {
		return err
	}
	return addSeatPermissions(tx, roleID, add)
}

// addSeatPermissions gives every seat of a role its new permissions' rows
// (their use starts now, so decay counts from when they were given).
func addSeatPermissions(tx *gorm.DB, roleID string, perms []models.Permission) error {
	var seats []string
	if err := tx.Model(&models.Seat{}).Where("role_id = ?", roleID).Pluck("id", &seats).Error; err != nil {
		return err
	}
	var rows []models.SeatPermission
	for _, s := range seats {
		for _, p := range perms {
			rows = append(rows, models.SeatPermission{SeatID: s, PermissionID: p.ID})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 200).Error
}

// roleViews shows roles with their permissions (scopes named) and seats.
func (r *Runtime) roleViews(ctx context.Context, tx *gorm.DB, roles []models.Role) ([]RoleView, error) {
	out := make([]RoleView, 0, len(roles))
	if len(roles) == 0 {
		return out, nil
	}
	ids := make([]string, len(roles))
	for i, role := range roles {
		ids[i] = role.ID
	}
	var perms []models.Permission
	if err := tx.WithContext(ctx).Where("holder_kind = ? AND holder_id IN ?", models.HolderRole, ids).Order("verb, scope").Find(&perms).Error; err != nil {
		return nil, err
	}
	var counts []struct {
		RoleID string
		N      int
	}
	if err := tx.WithContext(ctx).Model(&models.Seat{}).Select("role_id, COUNT(*) AS n").Where("role_id IN ?", ids).Group("role_id").Scan(&counts).Error; err != nil {
		return nil, err
	}
	names := r.scopeNames(ctx, tx, perms)
	byRole := map[string][]PermissionView{}
	for _, p := range perms {
		byRole[p.HolderID] = append(byRole[p.HolderID], PermissionView{ID: p.ID, PermissionInput: permInput(p), ScopeName: names[p.Scope], LastUsedAt: p.LastUsedAt})
	}
	seats := map[string]int{}
	for _, c := range counts {
		seats[c.RoleID] = c.N
	}
	for _, role := range roles {
		v := RoleView{ID: role.ID, Name: role.Name, Description: role.Description, DecayDays: role.DecayDays,
			Permissions: byRole[role.ID], Seats: seats[role.ID], CreatedAt: role.CreatedAt, UpdatedAt: role.UpdatedAt}
		if v.Permissions == nil {
			v.Permissions = []PermissionView{}
		}
		out = append(out, v)
	}
	return out, nil
}

// scopeNames shows each scope with its noun's name where it has one
// (vault:customer-a); a scope whose noun is gone shows its id.
func (r *Runtime) scopeNames(ctx context.Context, tx *gorm.DB, perms []models.Permission) map[string]string {
	out := map[string]string{}
	ids := map[string][]string{}
	for _, p := range perms {
		out[p.Scope] = p.Scope
		kind, id, ok := strings.Cut(p.Scope, ":")
		if ok {
			ids[kind] = append(ids[kind], id)
		}
	}
	for kind, col := range map[string]string{"tenant": "name", "agent": "name", "vault": "name", "session": "title"} {
		if len(ids[kind]) == 0 {
			continue
		}
		var rows []struct{ ID, Name string }
		tx.WithContext(ctx).Table(kind+"s").Select("id, "+col+" AS name").Where("id IN ?", ids[kind]).Scan(&rows)
		for _, row := range rows {
			if row.Name != "" {
				out[kind+":"+row.ID] = kind + ":" + row.Name
			}
		}
	}
	return out
}

// ScopeChoice is one scope a role form offers, with its noun's name.
type ScopeChoice struct {
	Value string // "*" or kind:id
	Label string
	Kind  string // "" (everything), tenant, agent, vault, session
}

// maxScopeChoices bounds each kind's choices on a form (the newest first).
const maxScopeChoices = 100

// ScopeChoices are the scopes a role form offers p: everything, then the
// tenants, agents, vaults and open sessions p may list.
func (r *Runtime) ScopeChoices(ctx context.Context, p Principal) []ScopeChoice {
	out := []ScopeChoice{{Value: "*", Label: "Everything", Kind: ""}}
	add := func(kind, verb, table, col, where string) {
		if !p.Can(verb) {
			return
		}
		var rows []struct{ ID, Name string }
		q := r.db.WithContext(ctx).Table(table).Select("id, " + col + " AS name")
		if where != "" {
			q = q.Where(where)
		}
		q.Order("created_at DESC").Limit(maxScopeChoices).Scan(&rows)
		for _, row := range rows {
			label := row.Name
			if label == "" {
				label = row.ID
			}
			out = append(out, ScopeChoice{Value: kind + ":" + row.ID, Label: label, Kind: kind})
		}
	}
	add(ScopeTenant, "Tenant.list", "tenants", "name", "")
	add(ScopeAgent, "Agent.list", "agents", "name", "")
	add(ScopeVault, "Vault.list", "vaults", "name", "")
	add(ScopeSession, "Session.list", "sessions", "title", "state <> 'ended'")
	// Only what some grant of p covers: a form shows no vault p cannot see.
	grants := p.Grants()
	for _, g := range grants {
		if g.Scope.Kind == "" {
			return out
		}
	}
	// "Everything" only to whom holds a grant on everything (returned above):
	// anyone else is refused it, so it is not offered.
	kept := out[1:1]
	for _, ch := range out[1:] {
		s := Scope{Kind: ch.Kind, ID: strings.TrimPrefix(ch.Value, ch.Kind+":")}
		for _, g := range grants {
			if r.scopeCovers(ctx, g.Scope, s) {
				kept = append(kept, ch)
				break
			}
		}
	}
	return kept
}
