package runtime

import (
	"context"
	"strings"
)

// scopeByName reads tenant:<name> and vault:<name> as the id they name, as
// refusals show them ("Vault.use vault:customer-a") and {tenant} and
// {vault} routes take them. Names follow the vault rules (no "_") and ids
// always hold one, so a name is never mistaken for an id. Stored by id.
func (r *Runtime) scopeByName(ctx context.Context, s Scope) Scope {
	var table string
	switch s.Kind {
	case "tenant":
		table = "tenants"
	case "vault":
		table = "vaults"
	default:
		return s
	}
	if s.ID == "" || strings.Contains(s.ID, "_") {
		return s
	}
	var ids []string
	if err := r.db.WithContext(ctx).Table(table).Where("name = ?", s.ID).Limit(2).Pluck("id", &ids).Error; err != nil || len(ids) != 1 {
		return s
	}
	s.ID = ids[0]
	return s
}
