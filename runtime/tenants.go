package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// Tenants (issue 13 item 5): a tenant is a customer of the operator, holding
// its own sessions and vaults and the people who belong to it. Tenant '' is
// the operator. A tenant's people hold the same access levels as the
// operator's, scoped to tenant:<id> and without OperatorOnlyVerbs; to them a
// noun of another tenant, or of the operator, does not exist (404).

// OperatorOnlyVerbs are left out of the presets of a tenant's people: the
// operator's catalog (agents, versions, skills, functions), its notification
// channels, tenants themselves, and naming owners. A Noun.* entry stands for
// every verb of that noun. The core check (P1) reads TenantPreset.
var OperatorOnlyVerbs = []string{
	"Agent.*", "Version.*", "Skill.*", "Function.*",
	"Channel.*", "Notification.list",
	"Tenant.create", "Tenant.update", "Tenant.delete",
	"User.grant_owner",
}

// tenantVerbs are the Tenant noun's verbs: reads for every access level
// (a tenant's person sees only their own tenant), writes operator admins+.
var (
	tenantReadVerbs  = []string{"Tenant.list", "Tenant.get"}
	tenantWriteVerbs = []string{"Tenant.create", "Tenant.update", "Tenant.delete"}
)

// Kinds of Change a tenant's verbs record (not undoable: create, rename
// and delete are verbs of their own).
const (
	ChangeTenantCreate = "tenant.create"
	ChangeTenantUpdate = "tenant.update"
	ChangeTenantDelete = "tenant.delete"
)

// The Tenant verbs join the presets: reads for every level, writes for
// admins and owners (a tenant's people lose the writes to OperatorOnly).
func init() {
	add := func(level string, verbs []string) {
		for _, v := range verbs {
			if !slices.Contains(presets[level], v) {
				presets[level] = append(presets[level], v)
			}
		}
		sort.Strings(presets[level])
	}
	for _, level := range AccessLevels {
		if level == AccessNone {
			continue // holds nothing but its seats' roles
		}
		add(level, tenantReadVerbs)
		if accessRank(level) <= accessRank(AccessAdmin) {
			add(level, tenantWriteVerbs)
		}
	}
}

// OperatorOnly reports whether verb is left out of a tenant person's preset.
func OperatorOnly(verb string) bool {
	noun, _, _ := strings.Cut(verb, ".")
	return slices.Contains(OperatorOnlyVerbs, verb) || slices.Contains(OperatorOnlyVerbs, noun+".*")
}

// TenantPreset is the verbs a tenant's person at an access level holds (on
// scope tenant:<id>): the level's preset without OperatorOnlyVerbs, sorted.
func TenantPreset(access string) []string {
	var out []string
	for _, v := range presets[access] {
		if !OperatorOnly(v) {
			out = append(out, v)
		}
	}
	return out
}

// MaxTenants bounds how many tenants one server holds.
const MaxTenants = 10000

// TenantView is a tenant as interfaces show it, with what it holds.
type TenantView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Sessions  int64     `json:"sessions"`
	Vaults    int64     `json:"vaults"`
	People    int64     `json:"people"`
}

// TenantInput creates or renames a tenant.
type TenantInput struct {
	Name string `json:"name" form:"name"`
}

// checkTenantName applies the vault/grant name rules (a-z, 0-9, -, 1 to 32),
// so a tenant reads the same in a scope (tenant:customer-a), a URL and a log.
func checkTenantName(name string) error {
	if errs := tools.CheckName(tools.KindMCP, name, nil); len(errs) > 0 {
		return invalid("name", errs[0].Code, errs[0].Detail)
	}
	return nil
}

func tenantNameTaken() error {
	return &Error{Kind: KindConflict, Code: "name_taken", Title: "Name taken", Field: "name", Detail: "another tenant already has this name",
		Fields: []FieldError{{Field: "name", Code: "name_taken", Detail: "another tenant already has this name"}}}
}

// loadTenant finds a tenant by id, then by name. A tenant's person finds
// only their own: to them every other tenant does not exist.
func (r *Runtime) loadTenant(ctx context.Context, p Principal, ref string) (models.Tenant, error) {
	var t models.Tenant
	err := r.db.WithContext(ctx).First(&t, "id = ?", ref).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		err = r.db.WithContext(ctx).First(&t, "name = ?", ref).Error
	}
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && p.TenantID != "" && t.ID != p.TenantID) {
		return models.Tenant{}, notFound("tenant", ref)
	}
	return t, err
}

// TenantRef resolves a tenant picked in a form or input (an id or a name;
// "" is the operator) for p: a tenant's person may only name their own.
func (r *Runtime) tenantFor(ctx context.Context, p Principal, field, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if p.TenantID != "" {
		// A tenant's people make things in their own tenant only.
		if ref == "" || ref == p.TenantID {
			return p.TenantID, nil
		}
		t, err := r.loadTenant(ctx, p, ref)
		if err != nil {
			return "", invalid(field, "unknown_tenant", fmt.Sprintf("no tenant %q", ref))
		}
		return t.ID, nil
	}
	if ref == "" {
		return "", nil
	}
	t, err := r.loadTenant(ctx, p, ref)
	if err != nil {
		return "", invalid(field, "unknown_tenant", fmt.Sprintf("no tenant %q", ref))
	}
	return t.ID, nil
}

func (r *Runtime) tenantView(ctx context.Context, t models.Tenant) TenantView {
	v := TenantView{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt}
	db := r.db.WithContext(ctx)
	db.Model(&models.Session{}).Where("tenant_id = ?", t.ID).Count(&v.Sessions)
	db.Model(&models.Vault{}).Where("tenant_id = ?", t.ID).Count(&v.Vaults)
	db.Model(&models.User{}).Where("tenant_id = ?", t.ID).Count(&v.People)
	return v
}

// TenantCreate is Tenant.create.
func (r *Runtime) TenantCreate(ctx context.Context, p Principal, in TenantInput) (TenantView, error) {
	var out TenantView
	err := r.run(ctx, p, "Tenant.create", func(a *act) error {
		name := strings.TrimSpace(in.Name)
		if err := checkTenantName(name); err != nil {
			return err
		}
		t := models.Tenant{ID: newID("ten"), Name: name, CreatedBy: p.ID, CreatedAt: r.now()}
		a.target(t.ID)
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var n int64
			if err := tx.Model(&models.Tenant{}).Count(&n).Error; err != nil {
				return err
			}
			if n >= MaxTenants {
				return conflict("too_many_tenants", fmt.Sprintf("a server holds at most %d tenants", MaxTenants))
			}
			tx.Model(&models.Tenant{}).Where("LOWER(name) = LOWER(?)", name).Count(&n)
			if n > 0 {
				return tenantNameTaken()
			}
			if err := tx.Create(&t).Error; err != nil {
				return err
			}
			return r.recordChange(ctx, tx, p, ChangeTenantCreate, t.ID, "created tenant "+t.Name, nil, t)
		})
		if err != nil {
			return err
		}
		r.auth.reset()
		out = TenantView{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt}
		return nil
	})
	return out, err
}

// TenantList is Tenant.list: every tenant for the operator's people, their
// own for a tenant's person.
func (r *Runtime) TenantList(ctx context.Context, p Principal) ([]TenantView, error) {
	out := []TenantView{}
	err := r.run(ctx, p, "Tenant.list", func(a *act) error {
		q := r.db.WithContext(ctx).Order("name").Limit(MaxTenants)
		if p.TenantID != "" {
			q = q.Where("id = ?", p.TenantID)
		}
		var ts []models.Tenant
		if err := q.Find(&ts).Error; err != nil {
			return fmt.Errorf("runtime: list tenants: %w", err)
		}
		for _, t := range ts {
			out = append(out, r.tenantView(ctx, t))
		}
		return nil
	})
	return out, err
}

// TenantNames maps every tenant's id to its name, for pickers and lists; a
// tenant's person gets only their own. Not an Action: it names, and only
// what the lists it decorates already show.
func (r *Runtime) TenantNames(ctx context.Context, p Principal) map[string]string {
	out := map[string]string{}
	q := r.db.WithContext(ctx).Order("name").Limit(MaxTenants)
	if p.TenantID != "" {
		q = q.Where("id = ?", p.TenantID)
	}
	var ts []models.Tenant
	q.Find(&ts)
	for _, t := range ts {
		out[t.ID] = t.Name
	}
	return out
}

// TenantGet is Tenant.get.
func (r *Runtime) TenantGet(ctx context.Context, p Principal, ref string) (TenantView, error) {
	var out TenantView
	err := r.run(ctx, p, "Tenant.get", func(a *act) error {
		t, err := r.loadTenant(ctx, p, ref)
		if err != nil {
			return err
		}
		a.target(t.ID)
		out = r.tenantView(ctx, t)
		return nil
	}, ref)
	return out, err
}

// TenantUpdate is Tenant.update: a new name (ids, and so scopes, stay).
func (r *Runtime) TenantUpdate(ctx context.Context, p Principal, ref string, in TenantInput) (TenantView, error) {
	var out TenantView
	err := r.run(ctx, p, "Tenant.update", func(a *act) error {
		t, err := r.loadTenant(ctx, p, ref)
		if err != nil {
			return err
		}
		a.target(t.ID)
		name := strings.TrimSpace(in.Name)
		if err := checkTenantName(name); err != nil {
			return err
		}
		before := t
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var n int64
			tx.Model(&models.Tenant{}).Where("LOWER(name) = LOWER(?) AND id <> ?", name, t.ID).Count(&n)
			if n > 0 {
				return tenantNameTaken()
			}
			if err := tx.Model(&t).Update("name", name).Error; err != nil {
				return err
			}
			t.Name = name
			return r.recordChange(ctx, tx, p, ChangeTenantUpdate, t.ID, "renamed tenant "+before.Name+" to "+name, before, t)
		})
		if err != nil {
			return err
		}
		r.auth.reset()
		out = r.tenantView(ctx, t)
		return nil
	}, ref)
	return out, err
}

// TenantDelete is Tenant.delete. A tenant that still holds sessions, vaults
// or people is not deleted (its things would fall to the operator): they
// are named in the refusal.
func (r *Runtime) TenantDelete(ctx context.Context, p Principal, ref string) error {
	return r.run(ctx, p, "Tenant.delete", func(a *act) error {
		t, err := r.loadTenant(ctx, p, ref)
		if err != nil {
			return err
		}
		a.target(t.ID)
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			v := r.tenantView(ctx, t)
			var invites int64
			tx.Model(&models.Invite{}).Where("tenant_id = ? AND used_at IS NULL AND expires_at > ?", t.ID, r.now()).Count(&invites)
			if v.Sessions+v.Vaults+v.People+invites > 0 {
				return conflict("tenant_not_empty", fmt.Sprintf("tenant %s still holds %d sessions, %d vaults, %d people and %d pending invitations: remove them first",
					t.Name, v.Sessions, v.Vaults, v.People, invites))
			}
			if err := tx.Delete(&models.Tenant{}, "id = ?", t.ID).Error; err != nil {
				return err
			}
			// Permissions scoped to the tenant cover nothing any more.
			if err := tx.Where("scope = ?", "tenant:"+t.ID).Delete(&models.Permission{}).Error; err != nil {
				return err
			}
			r.auth.reset()
			return r.recordChange(ctx, tx, p, ChangeTenantDelete, t.ID, "deleted tenant "+t.Name, t, nil)
		})
	}, ref)
}

// sessionVaultTenant is the rule binding a vault to a session: a session's
// vaults are its own tenant's or the operator's (tenant ”). An operator's
// vault bound to a tenant's session lends its credentials to the session
// without showing them to the tenant (the vault stays 404 to its people); a
// tenant's vault never serves another tenant's session, nor the operator's.
func sessionVaultTenant(field string, v models.Vault, sessionTenant string) error {
	if v.TenantID == "" || v.TenantID == sessionTenant {
		return nil
	}
	if sessionTenant == "" {
		return invalid(field, "vault_other_tenant", fmt.Sprintf("vault %q belongs to a tenant: only that tenant's sessions may use it", v.Name))
	}
	return invalid(field, "vault_other_tenant", fmt.Sprintf("vault %q belongs to another tenant: a session uses its own tenant's vaults or the operator's", v.Name))
}

// inviteTenant is the tenant an invitation brings its person into. A
// tenant's people are admins, members or viewers: owners are the
// operator's alone (the last-owner guard counts the operator's).
func (r *Runtime) inviteTenant(ctx context.Context, p Principal, access, ref string) (string, error) {
	tenant, err := r.tenantFor(ctx, p, "tenant", ref)
	if err != nil {
		return "", err
	}
	if tenant != "" && access == AccessOwner {
		return "", invalid("access", "invalid_access", "a tenant's people are admins, members or viewers: owners are the operator's")
	}
	return tenant, nil
}

// hiddenFrom reports whether a thing of tenant is hidden from p: a tenant's
// person sees only their own tenant's things, never the operator's.
func hiddenFrom(p Principal, tenant string) bool {
	return p.TenantID != "" && tenant != p.TenantID
}

// Lists show what listScope covers: everything, or the sessions and vaults
// of the tenants, agents, vaults and sessions the list verb's grants name.
// A tenant's person's scope is their tenant alone (check.go).

// sessionCond is the condition keeping the sessions l covers, on a sessions
// row named alias ("s." or "" for the sessions table itself).
func (l ListScope) sessionCond(alias string) (string, []any) {
	return l.condOn(alias+"tenant_id", alias+"agent_id", alias+"id")
}

// condOn is sessionCond over the columns holding a session's tenant, agent
// and id: a row's own copies of them (approvals carry them, so a tenant's
// people's lists seek the row's index rather than join every session).
func (l ListScope) condOn(tenant, agent, session string) (string, []any) {
	var conds []string
	var args []any
	add := func(col string, ids []string) {
		if len(ids) > 0 {
			conds = append(conds, col+" IN ?")
			args = append(args, ids)
		}
	}
	add(tenant, l.Tenants)
	add(agent, l.Agents)
	add(session, l.Sessions)
	if len(conds) == 0 {
		return "1 = 0", nil
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}

// scopeSessions keeps, of q over sessions (alias "s." or ""), what l covers.
func scopeSessions(q *gorm.DB, l ListScope, alias string) *gorm.DB {
	if l.All {
		return q
	}
	cond, args := l.sessionCond(alias)
	return q.Where(cond, args...)
}

// scopeApprovals keeps, of q over approvals (alias a), those of the
// sessions l covers, by the approval's own copies of its session's tenant,
// agent and id.
func scopeApprovals(q *gorm.DB, l ListScope) *gorm.DB {
	if l.All {
		return q
	}
	cond, args := l.condOn("a.tenant_id", "a.agent_id", "a.session_id")
	return q.Where(cond, args...)
}

// scopeBySession keeps, of q over rows of a session (col names its id),
// the rows of sessions l covers.
func scopeBySession(q *gorm.DB, l ListScope, col string) *gorm.DB {
	if l.All {
		return q
	}
	cond, args := l.sessionCond("")
	return q.Where(col+" IN (SELECT id FROM sessions WHERE "+cond+")", args...)
}

// scopeVaults keeps, of q over vaults, the vaults l covers.
func scopeVaults(q *gorm.DB, l ListScope) *gorm.DB {
	if l.All {
		return q
	}
	var conds []string
	var args []any
	if len(l.Tenants) > 0 {
		conds, args = append(conds, "tenant_id IN ?"), append(args, l.Tenants)
	}
	if len(l.Vaults) > 0 {
		conds, args = append(conds, "id IN ?"), append(args, l.Vaults)
	}
	if len(conds) == 0 {
		return q.Where("1 = 0")
	}
	return q.Where("("+strings.Join(conds, " OR ")+")", args...)
}

// scopeActions keeps, of q over actions, those of what l covers: the
// Actions of its sessions' agents, and of the people of its tenants.
func scopeActions(q *gorm.DB, l ListScope) *gorm.DB {
	if l.All {
		return q
	}
	cond, args := l.sessionCond("")
	where := "(by_kind = 'session' AND by_id IN (SELECT id FROM sessions WHERE " + cond + "))"
	if len(l.Tenants) > 0 {
		where += " OR (by_kind = 'user' AND by_id IN (SELECT id FROM users WHERE tenant_id IN ?))"
		args = append(args, l.Tenants)
	}
	return q.Where("("+where+")", args...)
}
