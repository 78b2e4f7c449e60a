package runtime

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// A page disables an action that cannot succeed and says why beforehand. The
// reasons come from here, from the same checks the verbs make, so a page and
// the verb never disagree. These reads are not Actions: like PendingApprovals
// they run on page views and reveal nothing the viewer cannot read already.

// refusal turns a check's error into the sentence a page shows.
func refusal(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := AsError(err); ok {
		return e.Detail
	}
	return "whether it can be done could not be checked: " + err.Error()
}

// vaultInUse refuses a vault bound to a running session: deleting it would
// take the credentials from under that session.
func vaultInUse(tx *gorm.DB, v models.Vault) error {
	var n int64
	err := tx.Table("session_vaults").Joins("JOIN sessions ON sessions.id = session_vaults.session_id").
		Where("session_vaults.vault_id = ? AND sessions.state = ?", v.ID, SessionActive).Count(&n).Error
	if err != nil {
		return fmt.Errorf("runtime: count sessions of vault %s: %w", v.ID, err)
	}
	if n > 0 {
		return conflict("vault_in_use", fmt.Sprintf("vault %s is bound to %d running session(s): end them first", v.Name, n))
	}
	return nil
}

// VaultDeleteRefusal says why Vault.delete would refuse this vault now, or "".
func (r *Runtime) VaultDeleteRefusal(ctx context.Context, p Principal, ref string) string {
	if !p.Can("Vault.delete") {
		return "deleting a vault needs the Vault.delete permission"
	}
	v, err := r.loadVault(ctx, ref)
	if err != nil {
		return refusal(err)
	}
	return refusal(vaultInUse(r.db.WithContext(ctx), v))
}

// skillInUse refuses a skill a version grants: deleting it would break that
// version's sessions.
func skillInUse(tx *gorm.DB, name string) error {
	users, err := skillUsers(tx, name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return conflict("skill_in_use", fmt.Sprintf("skill %s is granted by %s; remove the grant from those versions first",
			name, strings.Join(users, ", ")))
	}
	return nil
}

// SkillDeleteRefusal says why Skill.delete would refuse this skill now, or "".
func (r *Runtime) SkillDeleteRefusal(ctx context.Context, p Principal, ref string) string {
	if !p.Can("Skill.delete") {
		return "deleting a skill needs the Skill.delete permission"
	}
	rec, err := r.loadSkill(ctx, ref)
	if err != nil {
		return refusal(err)
	}
	return refusal(skillInUse(r.db.WithContext(ctx), rec.Name))
}

// UserRemoveRefusal says why User.remove would refuse removing this person
// now (the last owner; an owner, for someone who is not one), or "".
func (r *Runtime) UserRemoveRefusal(ctx context.Context, p Principal, id string) string {
	if !p.Can("User.remove") {
		return "removing a person needs the User.remove permission"
	}
	var u models.User
	if err := r.db.WithContext(ctx).First(&u, "id = ?", id).Error; err != nil {
		return refusal(err)
	}
	return refusal(checkOwnerChange(r.db.WithContext(ctx), p, u, ""))
}
