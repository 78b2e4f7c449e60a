package runtime

import (
	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Vaults get scopes first (issue 13): a member uses, reads and changes only
// the vaults whose permissions they hold. Whoever makes a vault is given
// Vault.* and Credential.* on it directly (the migration gave the same to
// the makers of vaults made before); admins and owners hold every vault
// through their access level.

// giveVaultCreator gives the person making v the direct permissions on it.
func (r *Runtime) giveVaultCreator(tx *gorm.DB, p Principal, v models.Vault) error {
	if p.Kind != PrincipalUser {
		return nil
	}
	scope := Scope{ScopeVault, v.ID}.String()
	var given []string
	for _, g := range []struct{ id, verb string }{{"perm_vault_" + v.ID, "Vault.*"}, {"perm_cred_" + v.ID, "Credential.*"}} {
		row := models.Permission{ID: g.id, HolderKind: models.HolderUser, HolderID: p.ID, Verb: g.verb, Scope: scope,
			CreatedBy: p.ID, CreatedAt: r.now()}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		given = append(given, g.verb+" "+scope)
	}
	// A Change, with no undo (changes_people.go).
	return r.recordVaultCreator(tx, p, v, given)
}
