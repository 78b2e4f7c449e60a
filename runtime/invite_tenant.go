package runtime

import (
	"context"

	"github.com/subako/subako/models"
)

// InviteTenantName is the name of the tenant an invitation joins ("" for the
// operator's), so the page behind the link says whose console it is.
func (r *Runtime) InviteTenantName(ctx context.Context, inv InviteView) string {
	if inv.Tenant == "" {
		return ""
	}
	var names []string
	r.db.WithContext(ctx).Model(&models.Tenant{}).Where("id = ?", inv.Tenant).Limit(1).Pluck("name", &names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
