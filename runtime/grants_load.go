package runtime

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subako/subako/models"
)

// A person's grants are read from the database: their access level's preset
// (on everything for the operator's people, on their tenant for a tenant's),
// the permissions given to them directly (a vault's creator), and each seat's
// role permissions but those removed from the seat. A narrowed token holds
// only its own rows that its holder still holds (so unseating narrows the
// token too). Read through a cache that the auth generation (authcache.go)
// empties on any write to who may do what.

// grantCache remembers a principal's grants for one auth generation, and at
// most authCacheTTL: another replica's writes do not move this one's
// generation, so an unseated person is refused there within that bound too
// (as a token revoked elsewhere is, authcache.go).
type grantCache struct {
	mu      sync.Mutex
	entries map[string]grantEntry
	// used: when a grant's use was last written, at most once a minute each.
	used map[string]time.Time
}

type grantEntry struct {
	gen    uint64
	until  time.Time
	grants []Grant
}

const grantCacheSize = 10000

func (c *grantCache) get(key string, gen uint64) ([]Grant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.gen != gen || !time.Now().Before(e.until) {
		return nil, false
	}
	return e.grants, true
}

func (c *grantCache) put(key string, gen uint64, gs []Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= grantCacheSize {
		c.entries = make(map[string]grantEntry, 64)
	}
	c.entries[key] = grantEntry{gen: gen, until: time.Now().Add(authCacheTTL), grants: gs}
}

// sessionGrants are a session token's verbs. Its own session is enforced by
// the verbs themselves (loadSession answers other_session); Source names it,
// so an Action reads "ToolCall.create session:ses_… (its own session)".
func sessionGrants(sessionID string) []Grant {
	out := make([]Grant, 0, len(sessionVerbs))
	for _, v := range sessionVerbs {
		out = append(out, Grant{Verb: v, Scope: ScopeAll, Source: "session:" + sessionID})
	}
	return out
}

// grantsOf is what p holds now: read from the database for a person (through
// the cache), as built for anyone else.
func (r *Runtime) grantsOf(ctx context.Context, p Principal) []Grant {
	if p.Kind != PrincipalUser || r.db == nil {
		return p.grants
	}
	gen := r.auth.generation()
	key := p.ID + "\x00" + p.TokenID + "\x00" + p.Access + "\x00" + p.TenantID
	if gs, ok := r.grantCache.get(key, gen); ok {
		return gs
	}
	gs, err := r.loadGrants(ctx, p)
	if err != nil {
		r.opts.Log.Error("runtime: load grants", "user", p.ID, "err", err)
		return accessGrants(p.Access, p.TenantID)
	}
	r.grantCache.put(key, gen, gs)
	return gs
}

// accessGrants are a person's access level as grants: the preset on
// everything for the operator's people; for a tenant's, the tenant preset
// (without the operator's own verbs, tenants.go) on their tenant.
func accessGrants(access, tenant string) []Grant {
	if tenant == "" {
		return presetGrants(access, ScopeAll)
	}
	vs := TenantPreset(access)
	out := make([]Grant, 0, len(vs))
	for _, v := range vs {
		out = append(out, Grant{Verb: v, Scope: Scope{ScopeTenant, tenant}, Source: "access:" + access})
	}
	return out
}

// loadGrants reads a person's grants (and a narrowed token's) from the database.
func (r *Runtime) loadGrants(ctx context.Context, p Principal) ([]Grant, error) {
	db := r.db.WithContext(ctx)
	gs := accessGrants(p.Access, p.TenantID)
	var direct []models.Permission
	if err := db.Where("holder_kind = ? AND holder_id = ?", models.HolderUser, p.ID).Order("created_at, id").Find(&direct).Error; err != nil {
		return nil, err
	}
	for _, row := range direct {
		gs = append(gs, grantFromRow(row, "direct", ""))
	}
	type seatRow struct {
		SeatID   string
		RoleName string
		models.Permission
	}
	var seated []seatRow
	err := db.Table("seats").
		Select("seats.id AS seat_id, roles.name AS role_name, permissions.*").
		Joins("JOIN roles ON roles.id = seats.role_id").
		Joins("JOIN permissions ON permissions.holder_kind = ? AND permissions.holder_id = roles.id", models.HolderRole).
		Joins("LEFT JOIN seat_permissions sp ON sp.seat_id = seats.id AND sp.permission_id = permissions.id").
		Where("seats.user_id = ? AND sp.removed_at IS NULL", p.ID).
		Order("seats.created_at, permissions.created_at, permissions.id").
		Scan(&seated).Error
	if err != nil {
		return nil, err
	}
	for _, row := range seated {
		gs = append(gs, grantFromRow(row.Permission, "role:"+row.RoleName, row.SeatID))
	}
	if p.TenantID != "" {
		gs = withinTenantGrants(gs, p.TenantID)
	}
	if p.TokenID == "" {
		return gs, nil
	}
	var t models.Token
	if err := db.Where("id = ?", p.TokenID).Take(&t).Error; err != nil {
		return nil, err
	}
	if !t.Narrowed {
		return gs, nil
	}
	// A narrowed token: its own rows, each while some grant of its holder
	// still covers it, with that grant's limit, counted on its permission
	// (tokens_narrow.go).
	return r.tokenGrants(ctx, t.ID, gs)
}

// withinTenantGrants keeps a tenant's person's direct and role grants to
// their tenant, as their access level's preset is: everything becomes their
// tenant, and the operator's own verbs (OperatorOnlyVerbs) are dropped, so a
// seat in one of the operator's roles gives them no more than that.
func withinTenantGrants(gs []Grant, tenant string) []Grant {
	out := make([]Grant, 0, len(gs))
	for _, g := range gs {
		if g.Scope.Kind == "" {
			g.Scope = Scope{ScopeTenant, tenant}
		}
		noun, all := strings.CutSuffix(g.Verb, ".*")
		switch {
		case OperatorOnly(g.Verb):
		case all && slices.ContainsFunc(OperatorOnlyVerbs, func(v string) bool { return strings.HasPrefix(v, noun+".") }):
			// Tenant.*, User.*: each verb of the noun but the operator's.
			for _, v := range AllVerbs() {
				if strings.HasPrefix(v, noun+".") && !OperatorOnly(v) {
					e := g
					e.Verb = v
					out = append(out, e)
				}
			}
		default:
			out = append(out, g)
		}
	}
	return out
}

func grantFromRow(row models.Permission, source, seat string) Grant {
	sc, err := ParseScope(row.Scope)
	if err != nil {
		// A row that does not parse covers nothing.
		sc = Scope{Kind: "invalid", ID: row.Scope}
	}
	l := Limit{Count: row.LimitCount, Period: row.LimitPeriod, Field: row.LimitField, SpendSC: row.LimitSpendSC}
	if row.LimitValues != "" {
		_ = json.Unmarshal([]byte(row.LimitValues), &l.Values)
	}
	return Grant{PermissionID: row.ID, Verb: row.Verb, Scope: sc, Limit: l, Source: source, SeatID: seat}
}

// principalFor is a person as they act now, with their grants read.
func (r *Runtime) principalFor(ctx context.Context, u models.User, tokenID string) Principal {
	p := UserPrincipal(u.ID, u.Email, u.Access)
	p.TenantID = u.TenantID
	p.TokenID = tokenID
	p.grants = r.grantsOf(ctx, p)
	return p
}

// stampUse notes that g allowed a call: its seat permission's or row's
// last_used_at, at most once a minute per grant in this process (decay
// reads it). Not a change to what anyone may do: the auth cache stays.
func (r *Runtime) stampUse(ctx context.Context, g Grant) {
	if g.PermissionID == "" || r.db == nil {
		return
	}
	now := r.now()
	key := g.SeatID + "\x00" + g.PermissionID
	c := &r.grantCache
	c.mu.Lock()
	if last, ok := c.used[key]; ok && now.Sub(last) < time.Minute {
		c.mu.Unlock()
		return
	}
	if c.used == nil || len(c.used) >= grantCacheSize {
		c.used = make(map[string]time.Time, 64)
	}
	c.used[key] = now
	c.mu.Unlock()
	db := r.db.WithContext(context.WithValue(context.WithoutCancel(ctx), authTouch{}, true))
	if g.SeatID == "" {
		db.Model(&models.Permission{}).Where("id = ?", g.PermissionID).UpdateColumn("last_used_at", now)
		return
	}
	res := db.Model(&models.SeatPermission{}).Where("seat_id = ? AND permission_id = ?", g.SeatID, g.PermissionID).UpdateColumn("last_used_at", now)
	if res.Error == nil && res.RowsAffected == 0 {
		db.Create(&models.SeatPermission{SeatID: g.SeatID, PermissionID: g.PermissionID, LastUsedAt: &now})
	}
}
