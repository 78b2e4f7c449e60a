package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// A seat is a person filling a role ("Role.assign" on the People page). The
// person holds the role's permissions from the seat's creation until its
// deletion, less any decay removed (decay.go).

// MaxSeatsPerPerson bounds the roles one person fills.
const MaxSeatsPerPerson = 50

// SeatView is a seat as interfaces show it.
type SeatView struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	RoleName  string    `json:"role_name"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	// Removed are the role's permissions decay (or a person) took from this
	// seat, as "Verb scope".
	Removed []string `json:"removed"`
}

// SeatInput seats a person (by id or email) in a role (by id or name).
type SeatInput struct {
	User string `json:"user" form:"user"`
	Role string `json:"role" form:"role"`
}

// SeatFilter narrows Seat.list.
type SeatFilter struct {
	User string `json:"user" query:"user"`
	Role string `json:"role" query:"role"`
}

// seatSnapshot is a seat as a Change's before and after.
type seatSnapshot struct {
	Seat      models.Seat             `json:"seat"`
	Email     string                  `json:"email"`
	RoleName  string                  `json:"role_name"`
	SeatPerms []models.SeatPermission `json:"seat_permissions,omitempty"`
}

// SeatCreate is Seat.create. Whoever seats a person must hold every
// permission of the role themselves.
func (r *Runtime) SeatCreate(ctx context.Context, p Principal, in SeatInput) (SeatView, error) {
	var out SeatView
	err := r.run(ctx, p, "Seat.create", func(a *act) error {
		if strings.TrimSpace(in.User) == "" {
			return invalid("user", "user_required", "user is required (a person's id or email)")
		}
		if strings.TrimSpace(in.Role) == "" {
			return invalid("role", "role_required", "role is required (a role's id or name)")
		}
		if isPreset(in.Role) {
			return invalid("role", "built_in_role", fmt.Sprintf("%s is an access level, not a role: change the person's access instead", in.Role))
		}
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var u models.User
			q := tx.Where("id = ? OR email = ?", in.User, strings.ToLower(strings.TrimSpace(in.User)))
			if p.TenantID != "" { // a tenant's person seats their own tenant's people only
				q = q.Where("tenant_id = ?", p.TenantID)
			}
			if err := q.First(&u).Error; errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound("person", in.User)
			} else if err != nil {
				return err
			}
			role, err := findRole(tx.Clauses(clause.Locking{Strength: "UPDATE"}), p, in.Role)
			if err != nil {
				return err
			}
			a.target(u.ID, role.ID)
			var perms []models.Permission
			if err := tx.Where("holder_kind = ? AND holder_id = ?", models.HolderRole, role.ID).Find(&perms).Error; err != nil {
				return err
			}
			for _, pm := range perms {
				s, err := ParseScope(pm.Scope)
				if err != nil || !r.mayGrant(ctx, p, pm.Verb, s) {
					return &Error{Kind: KindForbidden, Code: "permission_denied", Title: "Permission denied", Field: "role",
						MissingPermission: pm.Verb + " " + pm.Scope,
						Detail:            fmt.Sprintf("role %s holds %s %s, which you do not hold yourself, so you may not seat anyone in it", role.Name, pm.Verb, pm.Scope)}
				}
			}
			if err := tenantSeatRefusal(u, role, perms); err != nil {
				return err
			}
			var n int64
			if err := tx.Model(&models.Seat{}).Where("user_id = ?", u.ID).Count(&n).Error; err != nil {
				return err
			}
			if n >= MaxSeatsPerPerson {
				return conflict("too_many_seats", fmt.Sprintf("a person fills at most %d roles", MaxSeatsPerPerson))
			}
			if err := tx.Model(&models.Seat{}).Where("user_id = ? AND role_id = ?", u.ID, role.ID).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return conflict("already_seated", fmt.Sprintf("%s already fills role %s", u.Email, role.Name))
			}
			seat := models.Seat{ID: newID("seat"), UserID: u.ID, RoleID: role.ID, CreatedBy: p.ID, CreatedAt: r.now()}
			if err := tx.Create(&seat).Error; err != nil {
				return err
			}
			if err := addSeatPermissions(tx, role.ID, perms); err != nil {
				return err
			}
			out = SeatView{ID: seat.ID, User: u.ID, Email: u.Email, Role: role.ID, RoleName: role.Name, CreatedBy: p.ID, CreatedAt: seat.CreatedAt, Removed: []string{}}
			return r.recordChange(ctx, tx, p, ChangeSeatCreate, seat.ID, fmt.Sprintf("seated %s in role %s", u.Email, role.Name), nil,
				seatSnapshot{Seat: seat, Email: u.Email, RoleName: role.Name})
		})
		r.auth.reset() // committed: their tokens and pages carry the role from the next request
		return err
	})
	return out, err
}

// SeatDelete is Seat.delete: the person holds none of the role's permissions
// from the very next request of any cookie, token or open live page.
func (r *Runtime) SeatDelete(ctx context.Context, p Principal, id string) error {
	return r.run(ctx, p, "Seat.delete", func(a *act) error {
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			snap, err := loadSeat(tx, id)
			if err == nil && p.TenantID != "" && !r.sameTenant(tx, p, snap.Seat.UserID) {
				err = notFound("seat", id)
			}
			if err != nil {
				return err
			}
			a.target(snap.Seat.ID, snap.Seat.UserID, snap.Seat.RoleID)
			if err := tx.Where("seat_id = ?", snap.Seat.ID).Delete(&models.SeatPermission{}).Error; err != nil {
				return err
			}
			if err := tx.Where("id = ?", snap.Seat.ID).Delete(&models.Seat{}).Error; err != nil {
				return err
			}
			return r.recordChange(ctx, tx, p, ChangeSeatDelete, snap.Seat.ID, fmt.Sprintf("unseated %s from role %s", snap.Email, snap.RoleName), snap, nil)
		})
		r.auth.reset() // committed: refused from the next request on
		if err == nil {
			r.seatChanged()
		}
		return err
	}, id)
}

// seatChanged tells open live pages that who may do what changed, so each
// re-resolves its person (and ends if refused).
func (r *Runtime) seatChanged() {
	r.publish(Event{Kind: EventAccess})
}

// loadSeat reads a seat (locked) with its person's email, role's name and rows.
func loadSeat(tx *gorm.DB, id string) (seatSnapshot, error) {
	var s seatSnapshot
	if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&s.Seat, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return s, notFound("seat", id)
	} else if err != nil {
		return s, err
	}
	var email, role []string
	tx.Model(&models.User{}).Where("id = ?", s.Seat.UserID).Pluck("email", &email)
	tx.Model(&models.Role{}).Where("id = ?", s.Seat.RoleID).Pluck("name", &role)
	if len(email) == 1 {
		s.Email = email[0]
	}
	if len(role) == 1 {
		s.RoleName = role[0]
	}
	err := tx.Where("seat_id = ?", s.Seat.ID).Find(&s.SeatPerms).Error
	return s, err
}

// SeatList is Seat.list: who fills which role, by person or role.
func (r *Runtime) SeatList(ctx context.Context, p Principal, f SeatFilter) ([]SeatView, error) {
	out := []SeatView{}
	err := r.run(ctx, p, "Seat.list", func(a *act) error {
		q := r.db.WithContext(ctx).Table("seats AS s").
			Select("s.*, COALESCE(u.email, '') AS email, COALESCE(ro.name, '') AS role_name").
			Joins("LEFT JOIN users u ON u.id = s.user_id").
			Joins("LEFT JOIN roles ro ON ro.id = s.role_id")
		if f.User != "" {
			q = q.Where("s.user_id = ? OR u.email = ?", f.User, f.User)
		}
		if f.Role != "" {
			q = q.Where("s.role_id = ? OR ro.name = ?", f.Role, f.Role)
		}
		if p.TenantID != "" {
			q = q.Where("u.tenant_id = ?", p.TenantID)
		}
		var rows []struct {
			models.Seat
			Email    string
			RoleName string
		}
		if err := q.Order("s.created_at, s.id").Limit(MaxSeatsPerPerson * MaxRoles).Scan(&rows).Error; err != nil {
			return fmt.Errorf("runtime: list seats: %w", err)
		}
		ids := make([]string, len(rows))
		for i, s := range rows {
			ids[i] = s.ID
		}
		removed := map[string][]string{}
		if len(ids) > 0 {
			var gone []struct {
				SeatID string
				Verb   string
				Scope  string
			}
			r.db.WithContext(ctx).Table("seat_permissions AS sp").Select("sp.seat_id, pm.verb, pm.scope").
				Joins("JOIN permissions pm ON pm.id = sp.permission_id").
				Where("sp.seat_id IN ? AND sp.removed_at IS NOT NULL", ids).Scan(&gone)
			for _, g := range gone {
				removed[g.SeatID] = append(removed[g.SeatID], g.Verb+" "+g.Scope)
			}
		}
		for _, s := range rows {
			v := SeatView{ID: s.ID, User: s.UserID, Email: s.Email, Role: s.RoleID, RoleName: s.RoleName, CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt, Removed: removed[s.ID]}
			if v.Removed == nil {
				v.Removed = []string{}
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// sameTenant reports whether a person belongs to p's tenant.
func (r *Runtime) sameTenant(tx *gorm.DB, p Principal, userID string) bool {
	var n int64
	tx.Model(&models.User{}).Where("id = ? AND tenant_id = ?", userID, p.TenantID).Count(&n)
	return n == 1
}
