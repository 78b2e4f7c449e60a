package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Invite kinds.
const (
	InviteSetup  = "setup"
	InviteInvite = "invite"
)

// InviteView describes a one-time link; Token is set only when it is created.
type InviteView struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Email     string    `json:"email,omitempty"`
	Access    string    `json:"access"`
	ExpiresAt time.Time `json:"expires_at"`
	Token     string    `json:"token,omitempty"`
	// Tenant is the tenant the person will belong to ("" for the operator).
	Tenant string `json:"tenant,omitempty"`
}

// EnsureSetupLink returns a fresh one-time owner setup token when the database
// has no users, replacing earlier unused ones; ok is false once someone exists.
func (r *Runtime) EnsureSetupLink(ctx context.Context) (token string, ok bool, err error) {
	err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&models.User{}).Count(&n).Error; err != nil || n > 0 {
			return err
		}
		if err := tx.Where("kind = ? AND used_at IS NULL", InviteSetup).Delete(&models.Invite{}).Error; err != nil {
			return err
		}
		var hash string
		token, hash = newSecret("setup")
		ok = true
		return tx.Create(&models.Invite{ID: newID("inv"), TokenHash: hash, Kind: InviteSetup, Access: AccessOwner,
			CreatedBy: "system", CreatedAt: r.now(), ExpiresAt: r.now().Add(r.opts.SetupTTL)}).Error
	})
	if err != nil {
		return "", false, fmt.Errorf("runtime: setup link: %w", err)
	}
	return token, ok, nil
}

// UserInvite is User.invite: a one-time link for a new person at an access level.
func (r *Runtime) UserInvite(ctx context.Context, p Principal, email, access string) (InviteView, error) {
	return r.UserInviteTenant(ctx, p, email, access, "")
}

// UserInviteTenant is User.invite into a tenant (an id or name; "" is the
// operator): the person accepting lands in it (tenants.go).
func (r *Runtime) UserInviteTenant(ctx context.Context, p Principal, email, access, tenantRef string) (InviteView, error) {
	var out InviteView
	err := r.run(ctx, p, "User.invite", func(a *act) error {
		email, err := checkEmail(email)
		if err != nil {
			return err
		}
		if !ValidAccess(access) {
			return invalid("access", "invalid_access", "access must be one of "+accessChoices)
		}
		if access == AccessOwner && !p.Can("User.grant_owner") {
			return denied(p, "User.grant_owner", "only an owner may invite an owner")
		}
		tenant, err := r.inviteTenant(ctx, p, access, tenantRef)
		if err != nil {
			return err
		}
		var n int64
		r.db.WithContext(ctx).Model(&models.User{}).Where("email = ?", email).Count(&n)
		if n > 0 {
			return &Error{Kind: KindConflict, Code: "email_taken", Title: "Conflict", Field: "email",
				Detail: fmt.Sprintf("%s already has access", email), Fields: []FieldError{{Field: "email", Code: "email_taken", Detail: email + " already has access"}}}
		}
		token, hash := newSecret("inv")
		inv := models.Invite{ID: newID("inv"), TokenHash: hash, Kind: InviteInvite, Email: email, Access: access,
			CreatedBy: p.ID, CreatedAt: r.now(), ExpiresAt: r.now().Add(r.opts.SetupTTL), TenantID: tenant}
		// One live link per email: inviting again (another access level, a
		// lost link) ends the earlier ones, so no forgotten link still works.
		// An owner's invitation is ended only by an owner, as owners are
		// only touched by owners.
		err = r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			earlier := tx.Model(&models.Invite{}).Where("kind = ? AND email = ? AND used_at IS NULL AND expires_at > ?", InviteInvite, email, r.now())
			if !p.Can("User.grant_owner") {
				earlier = earlier.Where("access <> ?", AccessOwner)
			}
			if p.TenantID != "" {
				earlier = earlier.Where("tenant_id = ?", p.TenantID)
			}
			if err := earlier.UpdateColumn("expires_at", r.now()).Error; err != nil {
				return err
			}
			return tx.Create(&inv).Error
		})
		if err != nil {
			return fmt.Errorf("runtime: create invite: %w", err)
		}
		a.target(inv.ID, email)
		out = InviteView{ID: inv.ID, Kind: inv.Kind, Email: email, Access: access, ExpiresAt: inv.ExpiresAt, Token: token, Tenant: tenant}
		return nil
	})
	return out, err
}

var errLinkInvalid = &Error{Kind: KindNotFound, Code: "link_invalid", Title: "This link is not valid",
	Detail: "the link was already used, has expired, or never existed: ask for a new one"}

// LookupInvite tells whether a one-time link can still be used, and for what.
func (r *Runtime) LookupInvite(ctx context.Context, token string) (InviteView, error) {
	var inv models.Invite
	err := r.db.WithContext(ctx).First(&inv, "token_hash = ? AND used_at IS NULL", hashSecret(token)).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && !r.now().Before(inv.ExpiresAt)) {
		return InviteView{}, errLinkInvalid
	}
	if err != nil {
		return InviteView{}, fmt.Errorf("runtime: lookup invite: %w", err)
	}
	return InviteView{ID: inv.ID, Kind: inv.Kind, Email: inv.Email, Access: inv.Access, ExpiresAt: inv.ExpiresAt, Tenant: inv.TenantID}, nil
}

// AcceptInput completes a one-time link. Email is taken from the link for
// invitations and from the form for the owner's setup.
type AcceptInput struct {
	Token    string `json:"token"`
	Email    string `json:"email" form:"email"`
	Name     string `json:"name" form:"name"`
	Password string `json:"password" form:"password"`
}

// AcceptInvite creates the person a one-time link was made for. The link is
// marked used in the same transaction, so it works exactly once.
func (r *Runtime) AcceptInvite(ctx context.Context, in AcceptInput) (UserView, error) {
	var out UserView
	err := r.runOpen(ctx, Anonymous, "User.accept_invite", func(a *act) error {
		inv, err := r.LookupInvite(ctx, in.Token)
		if err != nil {
			return err
		}
		a.target(inv.ID)
		email := inv.Email
		if inv.Kind == InviteSetup {
			if email, err = checkEmail(in.Email); err != nil {
				return err
			}
		}
		hash, err := hashPassword(in.Password)
		if err != nil {
			return err
		}
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			res := tx.Model(&models.Invite{}).Where("id = ? AND used_at IS NULL", inv.ID).Update("used_at", r.now())
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return errLinkInvalid
			}
			var n int64
			tx.Model(&models.User{}).Where("email = ?", email).Count(&n)
			if n > 0 {
				return invalid("email", "email_taken", email+" already has access")
			}
			u := models.User{ID: newID("usr"), Email: email, Name: strings.TrimSpace(in.Name), Access: inv.Access,
				PasswordHash: hash, CreatedAt: r.now(), UpdatedAt: r.now(), TenantID: inv.Tenant}
			a.target(u.ID)
			out = userView(u)
			return tx.Create(&u).Error
		})
	})
	return out, err
}

var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("not a password"), bcrypt.DefaultCost)
	return h
})

var errBadLogin = &Error{Kind: KindUnauthenticated, Code: "invalid_credentials", Title: "Sign-in failed",
	Detail: "email or password is wrong"}

// Login checks a password and opens a browser session, returning its id.
// addr is the client's address: failed attempts are throttled per account
// and per address, and a throttled attempt is refused before any check.
func (r *Runtime) Login(ctx context.Context, email, password, addr string) (string, UserView, error) {
	var sid string
	var out UserView
	// The label is what the audit log shows for a failed sign-in: only a
	// well-formed email is worth keeping, and never more than that.
	label := "anonymous"
	if e, err := checkEmail(email); err == nil {
		label = e
	}
	acct, from := accountKey(email), addressKey(addr)
	what, wait, record := r.logins.refuse(r.now(), acct, from)
	if wait > 0 && !record {
		return "", out, errThrottled(what, wait)
	}
	err := r.runOpen(ctx, Principal{Kind: PrincipalAnonymous, ID: "anonymous", Label: label}, "User.login", func(a *act) error {
		if wait > 0 {
			return errThrottled(what, wait)
		}
		u, err := r.checkPassword(ctx, a, email, password)
		if errors.Is(err, errBadLogin) {
			r.logins.fail(acct, r.now())
			r.logins.fail(from, r.now())
		}
		if err != nil {
			return err
		}
		r.logins.forget(acct)
		var hash string
		// Only the hash is stored: the id in the cookie is a credential.
		sid, hash = newSecret("ws")
		ws := models.WebSession{ID: hash, UserID: u.ID, CreatedAt: r.now(), ExpiresAt: r.now().Add(r.opts.WebSessionTTL)}
		out = userView(u)
		return r.db.WithContext(ctx).Create(&ws).Error
	})
	return sid, out, err
}

// checkPassword finds the account and checks its password.
func (r *Runtime) checkPassword(ctx context.Context, a *act, email, password string) (models.User, error) {
	var u models.User
	err := r.db.WithContext(ctx).First(&u, "email = ?", strings.ToLower(strings.TrimSpace(email))).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		// Spend the same time as a real check so timing does not reveal who exists.
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return u, errBadLogin
	}
	if err != nil {
		return u, err
	}
	a.target(u.ID)
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return u, errBadLogin
	}
	return u, nil
}

// Logout ends a browser session.
func (r *Runtime) Logout(ctx context.Context, p Principal, sessionID string) error {
	return r.runOpen(ctx, p, "User.logout", func(a *act) error {
		return r.db.WithContext(ctx).Delete(&models.WebSession{}, "id = ?", hashSecret(sessionID)).Error
	})
}

// AuthenticateSession resolves a browser session id to its person. A removed
// person's sessions are gone, so they are refused here at their next request.
func (r *Runtime) AuthenticateSession(ctx context.Context, id string) (Principal, error) {
	if id == "" {
		return Anonymous, ErrUnauthenticated
	}
	// One statement: every page and every live page's update reads it.
	var row struct {
		ID, Email, Access, TenantID string
		ExpiresAt                   time.Time
	}
	err := r.db.WithContext(ctx).Raw(`SELECT u.id, u.email, u.access, u.tenant_id, w.expires_at
FROM web_sessions w JOIN users u ON u.id = w.user_id WHERE w.id = ?`, hashSecret(id)).Scan(&row).Error
	if err != nil || row.ID == "" || !r.now().Before(row.ExpiresAt) {
		return Anonymous, ErrUnauthenticated
	}
	return r.principalFor(ctx, models.User{ID: row.ID, Email: row.Email, Access: row.Access, TenantID: row.TenantID}, ""), nil
}
