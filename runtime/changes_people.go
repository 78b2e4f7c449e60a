package runtime

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Changes to who may do what made by people and vault verbs (item 7 of
// issue 13): a person's access level changed (User.update) or the person
// removed (User.remove), and the direct permissions Vault.create gives its
// maker. Each is recorded in the write's own transaction.
//
// Undo: user.access puts the level back (refused when it changed again
// since, and under the same owner rules as User.update). user.remove has no
// undo (the person's browser sessions, tokens and password went with them:
// invite them again), nor has vault.create (delete the vault instead).
const (
	ChangeUserAccess  = "user.access"
	ChangeUserRemove  = "user.remove"
	ChangeVaultCreate = "vault.create"
)

// personSnapshot is a person as a Change keeps them: what they held.
type personSnapshot struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Access   string `json:"access"`
	TenantID string `json:"tenant_id,omitempty"`
	// Roles they were seated in, and permissions given them directly
	// ("Vault.* vault:vlt_…"), for a removal.
	Roles       []string `json:"roles,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
}

// snapshotPerson reads what u holds, with their seats and direct rows when full.
func snapshotPerson(tx *gorm.DB, u models.User, full bool) (personSnapshot, error) {
	s := personSnapshot{ID: u.ID, Email: u.Email, Access: u.Access, TenantID: u.TenantID}
	if !full {
		return s, nil
	}
	if err := tx.Table("seats").Select("roles.name").Joins("JOIN roles ON roles.id = seats.role_id").
		Where("seats.user_id = ?", u.ID).Order("roles.name").Limit(MaxRoles).Scan(&s.Roles).Error; err != nil {
		return s, fmt.Errorf("runtime: read seats: %w", err)
	}
	var rows []models.Permission
	if err := tx.Where("holder_kind = ? AND holder_id = ?", models.HolderUser, u.ID).Order("created_at, id").Limit(1000).Find(&rows).Error; err != nil {
		return s, fmt.Errorf("runtime: read permissions: %w", err)
	}
	for _, row := range rows {
		s.Permissions = append(s.Permissions, row.Verb+" "+row.Scope)
	}
	return s, nil
}

// recordAccessChange records u's access level going from before to u.Access.
func (r *Runtime) recordAccessChange(ctx context.Context, tx *gorm.DB, p Principal, u models.User, before string) error {
	b, _ := snapshotPerson(tx, u, false)
	b.Access = before
	a, _ := snapshotPerson(tx, u, false)
	return r.recordChange(ctx, tx, p, ChangeUserAccess, u.ID, fmt.Sprintf("changed %s's access from %s to %s", u.Email, before, u.Access), b, a)
}

// recordRemoval records u's removal, with what they held, before the rows go.
func (r *Runtime) recordRemoval(ctx context.Context, tx *gorm.DB, p Principal, u models.User) error {
	b, err := snapshotPerson(tx, u, true)
	if err != nil {
		return err
	}
	return r.recordChange(ctx, tx, p, ChangeUserRemove, u.ID, fmt.Sprintf("removed %s (%s)", u.Email, u.Access), b, nil)
}

// vaultGrantSnapshot is what Vault.create gave its maker.
type vaultGrantSnapshot struct {
	Vault       string   `json:"vault"`
	VaultName   string   `json:"vault_name"`
	User        string   `json:"user"`
	Permissions []string `json:"permissions"`
}

// recordVaultCreator records the direct permissions v's maker was given.
func (r *Runtime) recordVaultCreator(tx *gorm.DB, p Principal, v models.Vault, perms []string) error {
	ctx := context.Background()
	if tx.Statement != nil && tx.Statement.Context != nil {
		ctx = tx.Statement.Context
	}
	return r.recordChange(ctx, tx, p, ChangeVaultCreate, v.ID,
		fmt.Sprintf("gave %s %s on vault %s they made", p.Label, countOf(len(perms), "permission"), v.Name), nil,
		vaultGrantSnapshot{Vault: v.ID, VaultName: v.Name, User: p.ID, Permissions: perms})
}

// undoUserAccess puts a person's access level back, if it is still what the
// Change made it, under User.update's owner rules.
func undoUserAccess(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	var before, after personSnapshot
	if err := decodeSide(c.BeforeJSON, &before); err != nil {
		return nil, err
	}
	if err := decodeSide(c.AfterJSON, &after); err != nil {
		return nil, err
	}
	if !p.Can("User.update") {
		return nil, denied(p, "User.update", "undoing an access change changes the person's access")
	}
	u, err := lockUser(tx, c.Subject)
	if err == nil && hiddenFrom(p, u.TenantID) {
		err = notFound("user", c.Subject)
	}
	if err != nil {
		return nil, err
	}
	if u.Access != after.Access {
		return nil, conflict("changed_since", fmt.Sprintf("%s's access is %s now, not %s: change it on the People page instead", u.Email, u.Access, after.Access))
	}
	if !ValidAccess(before.Access) {
		return nil, conflict("not_undoable", fmt.Sprintf("%q is no access level", before.Access))
	}
	if err := checkOwnerChange(tx, p, u, before.Access); err != nil {
		return nil, err
	}
	if err := tx.Model(&u).Updates(map[string]any{"access": before.Access, "updated_at": time.Now().UTC()}).Error; err != nil {
		return nil, err
	}
	u.Access = before.Access
	return snapshotPerson(tx, u, false)
}

func init() {
	changeUndoers[ChangeUserAccess] = undoUserAccess
	// The access level none, shown as a built-in role (roles.go).
	presetText[AccessNone] = "nothing but what their seats' roles hold"
}
