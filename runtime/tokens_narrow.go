package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Tokens narrowed to the task (seed 004, "Access that narrows itself"): a
// token made with permissions holds only those (its own permissions rows,
// holder_kind "token"), each a subset of what its holder holds when the
// token is made and, at every request, of what the holder still holds: a
// token row no holder grant covers any more gives nothing (the principal
// loader intersects, tokenGrants). A token made with a narrowed token is
// narrowed too and never wider than the one that made it.

// maxTokenPermissions bounds how many permissions one token may carry.
const maxTokenPermissions = 100

// TokenChange is the Change kind of a token made or revoked.
const (
	ChangeTokenCreate = "token.create"
	ChangeTokenRevoke = "token.revoke"
)

// parsePermission reads "Noun.verb scope" (scope "*" when left out).
func parsePermission(field, s string) (Grant, error) {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return Grant{}, invalid(field, "invalid_permission", fmt.Sprintf("%s must be at most 300 characters", field))
	}
	verb, scope, _ := strings.Cut(s, " ")
	if err := checkVerb(verb); err != nil {
		e, _ := AsError(err)
		return Grant{}, invalid(field, e.Code, fmt.Sprintf("%s: %s (write \"Noun.verb scope\", e.g. \"Approval.approve session:ses_…\")", field, e.Detail))
	}
	sc, err := ParseScope(scope)
	if err != nil {
		e, _ := AsError(err)
		return Grant{}, invalid(field, e.Code, field+": "+e.Detail)
	}
	return Grant{Verb: verb, Scope: sc}, nil
}

// scopeChainOf is what covers a scope's own noun: a session is covered by
// itself, its agent and its tenant; a vault by itself and its tenant. A
// scope naming no such noun is an error naming field.
func (r *Runtime) scopeChainOf(ctx context.Context, field string, s Scope) ([]Scope, error) {
	db := r.db.WithContext(ctx)
	missing := func() error {
		return invalid(field, "unknown_scope", fmt.Sprintf("%s: no %s %q", field, s.Kind, truncate(s.ID, 100)))
	}
	switch s.Kind {
	case "":
		return []Scope{s}, nil
	case ScopeTenant:
		var t models.Tenant
		if err := db.First(&t, "id = ?", s.ID).Error; err != nil {
			return nil, missing()
		}
		return []Scope{s}, nil
	case ScopeAgent:
		var a models.Agent
		if err := db.First(&a, "id = ?", s.ID).Error; err != nil {
			return nil, missing()
		}
		return []Scope{s}, nil
	case ScopeVault:
		var v models.Vault
		if err := db.First(&v, "id = ?", s.ID).Error; err != nil {
			return nil, missing()
		}
		return withTenant([]Scope{s}, v.TenantID), nil
	case ScopeSession:
		var ses models.Session
		if err := db.First(&ses, "id = ?", s.ID).Error; err != nil {
			return nil, missing()
		}
		return withTenant([]Scope{s, {Kind: ScopeAgent, ID: ses.AgentID}}, ses.TenantID), nil
	}
	return nil, missing()
}

func withTenant(chain []Scope, tenant string) []Scope {
	if tenant != "" {
		chain = append(chain, Scope{Kind: ScopeTenant, ID: tenant})
	}
	return chain
}

// coveringGrant finds a grant in held that holds want's verb (Noun.* only
// by Noun.*) in a scope covering want's scope chain. A tenant person's `*`
// is already their tenant's scope in held, so it never covers another's.
// An unlimited grant is preferred: a token is limited only when its holder
// holds the permission under a limit alone.
func coveringGrant(held []Grant, want Grant, chain []Scope) (Grant, bool) {
	var limited *Grant
	for _, g := range held {
		if !g.Matches(want.Verb) || !g.Scope.covers(chain) {
			continue
		}
		if g.Limit.IsZero() {
			return g, true
		}
		if limited == nil {
			limited = &g
		}
	}
	if limited != nil {
		return *limited, true
	}
	return Grant{}, false
}

// narrowTo checks that each wanted permission is held by p (as p is now:
// through a narrowed token, only that token's), returning them. The
// refusal names the first permission not held.
func (r *Runtime) narrowTo(ctx context.Context, p Principal, want []string) ([]Grant, error) {
	if len(want) > maxTokenPermissions {
		return nil, invalid("permissions", "too_many_permissions", fmt.Sprintf("permissions must list at most %d, not %d", maxTokenPermissions, len(want)))
	}
	held := p.Grants()
	var out []Grant
	seen := map[string]bool{}
	for i, s := range want {
		field := fmt.Sprintf("permissions[%d]", i)
		g, err := parsePermission(field, s)
		if err != nil {
			return nil, err
		}
		g.Scope = r.scopeByName(ctx, g.Scope)
		key := g.Verb + " " + g.Scope.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		chain, err := r.scopeChainOf(ctx, field, g.Scope)
		if err != nil {
			return nil, err
		}
		if _, ok := coveringGrant(held, g, chain); !ok {
			return nil, &Error{Kind: KindInvalid, Code: "permission_not_held", Title: "Invalid input", Field: field,
				MissingPermission: key,
				Detail:            fmt.Sprintf("%s: you do not hold %s, so a token you make cannot either", field, key),
				Fields:            []FieldError{{Field: field, Code: "permission_not_held", Detail: "you do not hold " + key}}}
		}
		out = append(out, g)
	}
	return out, nil
}

// tokenNarrowed says whether p calls through a narrowed token.
func (r *Runtime) tokenNarrowed(ctx context.Context, p Principal) (models.Token, bool) {
	if p.TokenID == "" {
		return models.Token{}, false
	}
	var t models.Token
	if err := r.db.WithContext(ctx).First(&t, "id = ?", p.TokenID).Error; err != nil {
		return t, false
	}
	return t, t.Narrowed
}

// createNarrowedToken writes t with its permissions and the Change, in one
// transaction.
func (r *Runtime) createNarrowedToken(ctx context.Context, p Principal, t *models.Token, perms []Grant) error {
	return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(t).Error; err != nil {
			return fmt.Errorf("runtime: create token: %w", err)
		}
		names := make([]string, 0, len(perms))
		for _, g := range perms {
			row := models.Permission{ID: newID("perm"), HolderKind: models.HolderToken, HolderID: t.ID, Verb: g.Verb,
				Scope: g.Scope.String(), CreatedBy: p.ID, CreatedAt: r.now()}
			if err := tx.Create(&row).Error; err != nil {
				return fmt.Errorf("runtime: token permission: %w", err)
			}
			names = append(names, g.Verb+" "+g.Scope.String())
		}
		after := map[string]any{"id": t.ID, "name": t.Name, "user": t.UserID, "expires_at": t.ExpiresAt, "narrowed": t.Narrowed,
			"parent": t.ParentID, "permissions": names}
		summary := fmt.Sprintf("token %q made", t.Name)
		if t.Narrowed {
			summary = fmt.Sprintf("token %q made, narrowed to %s", t.Name, countOf(len(names), "permission"))
		}
		return r.recordChange(ctx, tx, p, ChangeTokenCreate, t.ID, summary, nil, after)
	})
}

// tokenPermissions reads the permissions of narrowed tokens, by token.
func (r *Runtime) tokenPermissions(ctx context.Context, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Permission
	err := r.db.WithContext(ctx).Where("holder_kind = ? AND holder_id IN ?", models.HolderToken, ids).Order("verb, scope").Find(&rows).Error
	for _, row := range rows {
		out[row.HolderID] = append(out[row.HolderID], row.Verb+" "+row.Scope)
	}
	return out, err
}

// tokenGrants are a narrowed token's effective grants: each of its rows that
// some grant of its holder (held, the person as they are now) still covers,
// with that grant's limit, counted on that grant's permission (a token never
// gets a count of its own beside its holder's). A row no longer covered
// gives nothing: unseating or narrowing the person narrows their tokens.
func (r *Runtime) tokenGrants(ctx context.Context, tokenID string, held []Grant) ([]Grant, error) {
	var rows []models.Permission
	if err := r.db.WithContext(ctx).Where("holder_kind = ? AND holder_id = ?", models.HolderToken, tokenID).Find(&rows).Error; err != nil {
		return nil, err
	}
	var out []Grant
	for _, row := range rows {
		sc, err := ParseScope(row.Scope)
		if err != nil {
			continue
		}
		want := Grant{Verb: row.Verb, Scope: sc}
		chain, err := r.scopeChainOf(ctx, "scope", sc)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Kind == KindInvalid {
				continue // its noun is gone: nothing to reach
			}
			return nil, err
		}
		g, ok := coveringGrant(held, want, chain)
		if !ok {
			continue
		}
		out = append(out, Grant{PermissionID: g.PermissionID, Verb: row.Verb, Scope: sc, Limit: g.Limit,
			Source: "token:" + tokenID + " via " + sourceWords(g.Source), SeatID: g.SeatID})
	}
	return out, nil
}

// revokeTokenAndMade revokes t and every token made with it (and with those,
// down to 20 generations), recording one Change.
func (r *Runtime) revokeTokenAndMade(ctx context.Context, p Principal, t models.Token) error {
	now := r.now()
	return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&t).UpdateColumn("revoked_at", now).Error; err != nil {
			return err
		}
		revoked := []string{t.ID}
		parents := []string{t.ID}
		for range 20 {
			var kids []string
			if err := tx.Model(&models.Token{}).Where("parent_id IN ? AND revoked_at IS NULL", parents).Pluck("id", &kids).Error; err != nil {
				return err
			}
			if len(kids) == 0 {
				break
			}
			if err := tx.Model(&models.Token{}).Where("id IN ?", kids).UpdateColumn("revoked_at", now).Error; err != nil {
				return err
			}
			revoked = append(revoked, kids...)
			parents = kids
		}
		summary := fmt.Sprintf("token %q revoked", t.Name)
		if len(revoked) > 1 {
			summary += fmt.Sprintf(" with the %d token(s) made with it", len(revoked)-1)
		}
		return r.recordChange(ctx, tx, p, ChangeTokenRevoke, t.ID, summary,
			map[string]any{"id": t.ID, "name": t.Name, "user": t.UserID}, map[string]any{"revoked": revoked})
	})
}
