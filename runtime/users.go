package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// UserView is a person as interfaces show them; it never carries the hash.
type UserView struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Access    string    `json:"access"`
	CreatedAt time.Time `json:"created_at"`
	// Tenant is the tenant the person belongs to ("" for the operator's).
	Tenant string `json:"tenant,omitempty"`
}

func userView(u models.User) UserView {
	return UserView{ID: u.ID, Email: u.Email, Name: u.Name, Access: u.Access, CreatedAt: u.CreatedAt, Tenant: u.TenantID}
}

// UserList is User.list.
func (r *Runtime) UserList(ctx context.Context, p Principal) ([]UserView, error) {
	var out []UserView
	err := r.run(ctx, p, "User.list", func(a *act) error {
		var users []models.User
		q := r.db.WithContext(ctx).Order("created_at")
		if p.TenantID != "" {
			// A tenant's people see the people of their tenant only.
			q = q.Where("tenant_id = ?", p.TenantID)
		}
		if err := q.Find(&users).Error; err != nil {
			return fmt.Errorf("runtime: list users: %w", err)
		}
		for _, u := range users {
			out = append(out, userView(u))
		}
		return nil
	})
	return out, err
}

// UserUpdateInput changes a person's access level or display name.
type UserUpdateInput struct {
	User   string  `json:"user" param:"user"`
	Access *string `json:"access"`
	Name   *string `json:"name"`
}

// UserUpdate is User.update. Only owners name or change owners, and the last
// owner cannot be demoted, so an installation never loses its keys.
func (r *Runtime) UserUpdate(ctx context.Context, p Principal, in UserUpdateInput) (UserView, error) {
	var out UserView
	err := r.run(ctx, p, "User.update", func(a *act) error {
		if in.Access != nil && !ValidAccess(*in.Access) {
			return invalid("access", "invalid_access", "access must be one of "+accessChoices)
		}
		if in.Name != nil && utf8.RuneCountInString(*in.Name) > 100 {
			return invalid("name", "name_too_long", "name must be at most 100 characters")
		}
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			u, err := lockUser(tx, in.User)
			if err == nil && hiddenFrom(p, u.TenantID) {
				err = notFound("user", in.User)
			}
			if err != nil {
				return err
			}
			if in.Access != nil && u.TenantID != "" && *in.Access == AccessOwner {
				return invalid("access", "invalid_access", "a tenant's people are admins, members or viewers: owners are the operator's")
			}
			prev := u.Access
			if in.Access != nil && *in.Access != u.Access {
				if err := checkOwnerChange(tx, p, u, *in.Access); err != nil {
					return err
				}
				u.Access = *in.Access
			}
			if in.Name != nil {
				u.Name = strings.TrimSpace(*in.Name)
			}
			out = userView(u)
			if err := tx.Model(&u).Updates(map[string]any{"access": u.Access, "name": u.Name, "updated_at": time.Now().UTC()}).Error; err != nil {
				return err
			}
			if u.Access != prev {
				// A Change on the Changes page, undoable (changes_people.go).
				return r.recordAccessChange(ctx, tx, p, u, prev)
			}
			return nil
		})
		// Committed: their tokens act at the new access from the next request.
		r.auth.reset()
		return err
	}, in.User)
	return out, err
}

// UserRemove is User.remove: the person's browser sessions and tokens go with
// them (ON DELETE CASCADE), so their next request is refused.
func (r *Runtime) UserRemove(ctx context.Context, p Principal, id string) error {
	return r.run(ctx, p, "User.remove", func(a *act) error {
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			u, err := lockUser(tx, id)
			if err == nil && hiddenFrom(p, u.TenantID) {
				err = notFound("user", id)
			}
			if err != nil {
				return err
			}
			if err := checkOwnerChange(tx, p, u, ""); err != nil {
				return err
			}
			// A Change keeping what they held (changes_people.go).
			if err := r.recordRemoval(ctx, tx, p, u); err != nil {
				return err
			}
			// Delete dependants explicitly as well: SQLite enforces ON DELETE only
			// with foreign_keys on, and access must end whatever the pragma.
			for _, m := range []any{&models.WebSession{}, &models.Token{}} {
				if err := tx.Where("user_id = ?", u.ID).Delete(m).Error; err != nil {
					return err
				}
			}
			return tx.Delete(&u).Error
		})
		r.auth.reset() // committed: their tokens are refused from the next request
		return err
	}, id)
}

func lockUser(tx *gorm.DB, id string) (models.User, error) {
	var u models.User
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&u, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return u, notFound("user", id)
	}
	return u, err
}

// checkOwnerChange guards owners: to is the new access level, "" for removal.
func checkOwnerChange(tx *gorm.DB, p Principal, u models.User, to string) error {
	if (u.Access == AccessOwner || to == AccessOwner) && !p.Can("User.grant_owner") {
		return denied(p, "User.grant_owner", "only an owner may add, change or remove an owner")
	}
	if u.Access != AccessOwner || to == AccessOwner {
		return nil
	}
	var owners []models.User
	if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("access = ?", AccessOwner).Find(&owners).Error; err != nil {
		return err
	}
	if len(owners) <= 1 {
		return conflict("last_owner", "the last owner cannot be removed or demoted: make another person an owner first")
	}
	return nil
}

func checkEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if email == "" {
		return "", invalid("email", "email_required", "email is required")
	}
	if len(email) > 254 {
		return "", invalid("email", "email_too_long", "email must be at most 254 characters")
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		return "", invalid("email", "invalid_email", fmt.Sprintf("%q is not an email address", email))
	}
	return email, nil
}

func hashPassword(pw string) (string, error) {
	switch {
	case len(pw) < 8:
		return "", invalid("password", "password_too_short", "password must be at least 8 characters")
	case len(pw) > 72:
		return "", invalid("password", "password_too_long", "password must be at most 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	return string(h), err
}
