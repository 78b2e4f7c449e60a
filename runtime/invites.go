package runtime

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// PendingInvites lists the invitation links still waiting to be used, newest
// first, for the People page; never their tokens, which are kept only as
// hashes. It is part of the page that User.list records, so it is not
// recorded itself, and it is empty for someone who may not invite.
func (r *Runtime) PendingInvites(ctx context.Context, p Principal) ([]InviteView, error) {
	if !p.Can("User.invite") {
		return nil, nil
	}
	var invs []models.Invite
	q := r.db.WithContext(ctx).Where("kind = ? AND used_at IS NULL AND expires_at > ?", InviteInvite, r.now())
	if p.TenantID != "" {
		q = q.Where("tenant_id = ?", p.TenantID)
	}
	err := q.Order("created_at DESC").Limit(500).Find(&invs).Error
	if err != nil {
		return nil, fmt.Errorf("runtime: list invites: %w", err)
	}
	out := make([]InviteView, 0, len(invs))
	for _, inv := range invs {
		out = append(out, InviteView{ID: inv.ID, Kind: inv.Kind, Email: inv.Email, Access: inv.Access, ExpiresAt: inv.ExpiresAt, Tenant: inv.TenantID})
	}
	return out, nil
}

// UserRevokeInvite is User.revoke_invite: the link stops working at once. An
// owner's invitation is revoked only by an owner, as only an owner made it.
func (r *Runtime) UserRevokeInvite(ctx context.Context, p Principal, id string) (InviteView, error) {
	var out InviteView
	err := r.run(ctx, p, "User.revoke_invite", func(a *act) error {
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var inv models.Invite
			err := tx.First(&inv, "id = ? AND kind = ?", id, InviteInvite).Error
			if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && hiddenFrom(p, inv.TenantID)) {
				return notFound("invitation", id)
			}
			if err != nil {
				return fmt.Errorf("runtime: load invite: %w", err)
			}
			a.target(inv.ID, inv.Email)
			if inv.UsedAt != nil || !r.now().Before(inv.ExpiresAt) {
				return conflict("invite_not_pending", fmt.Sprintf("the invitation for %s is no longer pending: it was used or has expired", inv.Email))
			}
			if inv.Access == AccessOwner && !p.Can("User.grant_owner") {
				return denied(p, "User.grant_owner", "only an owner may revoke an owner's invitation")
			}
			// Guarded on the row still pending, so a link accepted meanwhile
			// is not reported as revoked.
			res := tx.Model(&models.Invite{}).Where("id = ? AND used_at IS NULL", inv.ID).UpdateColumn("expires_at", r.now())
			if res.Error != nil {
				return fmt.Errorf("runtime: revoke invite: %w", res.Error)
			}
			if res.RowsAffected == 0 {
				return conflict("invite_not_pending", fmt.Sprintf("the invitation for %s was just used", inv.Email))
			}
			out = InviteView{ID: inv.ID, Kind: inv.Kind, Email: inv.Email, Access: inv.Access, ExpiresAt: r.now()}
			return nil
		})
	})
	return out, err
}
