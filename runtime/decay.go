package runtime

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// Access that narrows itself (seed 004): a seat's permission left unused past
// its role's decay_days (or the server's --permission-decay when the role
// says 0) is removed each night through a Change by the system, recorded as
// an Action by the system, and undoable on the Changes page by someone
// entitled to grant it. Only seats decay: an access level's preset is not a
// seat, so no owner (and never the last one) loses anything to decay.

// MaxDecayPerRun bounds the permissions one run removes; the rest wait a night.
const MaxDecayPerRun = 10000

// decayVerb names decay's Actions.
const decayVerb = "Seat.decay"

// decaySnapshot is one seat permission as decay found and left it.
type decaySnapshot struct {
	Seat       string     `json:"seat"`
	Permission string     `json:"permission"`
	User       string     `json:"user"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	RoleName   string     `json:"role_name"`
	Verb       string     `json:"verb"`
	Scope      string     `json:"scope"`
	LastUsedAt *time.Time `json:"last_used_at"`
	DecayDays  int        `json:"decay_days"`
	RemovedAt  *time.Time `json:"removed_at,omitempty"`
}

// decayIfDue runs decay once a day (the first reap of each UTC day).
func (r *Runtime) decayIfDue(ctx context.Context) {
	day := r.now().Truncate(24 * time.Hour).Unix()
	last := r.decayDay.Load()
	if last >= day || !r.decayDay.CompareAndSwap(last, day) {
		return
	}
	if _, err := r.DecayPermissions(ctx); err != nil {
		r.opts.Log.Error("runtime: permission decay", "err", err)
	}
}

// DecayPermissions removes every seat permission unused past its decay now,
// each through its own Change and Action by the system, and returns how many
// it removed. Exported so tests with a fake clock run it at once.
func (r *Runtime) DecayPermissions(ctx context.Context) (int, error) {
	now := r.now()
	var rows []struct {
		SeatID      string
		UserID      string
		Email       string
		RoleID      string
		RoleName    string
		DecayDays   int
		SeatCreated time.Time
		PermID      string
		Verb        string
		Scope       string
		PermCreated time.Time
		LastUsedAt  *time.Time
	}
	err := r.db.WithContext(ctx).Table("seats").
		Select("seats.id AS seat_id, seats.user_id, users.email, roles.id AS role_id, roles.name AS role_name, roles.decay_days, seats.created_at AS seat_created, "+
			"permissions.id AS perm_id, permissions.verb, permissions.scope, permissions.created_at AS perm_created, sp.last_used_at").
		Joins("JOIN roles ON roles.id = seats.role_id").
		Joins("JOIN users ON users.id = seats.user_id").
		Joins("JOIN permissions ON permissions.holder_kind = ? AND permissions.holder_id = roles.id", models.HolderRole).
		Joins("LEFT JOIN seat_permissions sp ON sp.seat_id = seats.id AND sp.permission_id = permissions.id").
		Where("sp.removed_at IS NULL").
		Order("seats.id, permissions.id").
		Scan(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("runtime: find decaying permissions: %w", err)
	}
	removed := 0
	for _, row := range rows {
		days := row.DecayDays
		if days == 0 {
			days = r.opts.PermissionDecayDays
		}
		if days <= 0 {
			continue
		}
		since := row.SeatCreated
		if row.PermCreated.After(since) {
			since = row.PermCreated
		}
		if row.LastUsedAt != nil && row.LastUsedAt.After(since) {
			since = *row.LastUsedAt
		}
		cutoff := now.Add(-time.Duration(days) * 24 * time.Hour)
		if since.After(cutoff) {
			continue
		}
		if removed >= MaxDecayPerRun {
			break
		}
		snap := decaySnapshot{Seat: row.SeatID, Permission: row.PermID, User: row.UserID, Email: row.Email, Role: row.RoleID, RoleName: row.RoleName,
			Verb: row.Verb, Scope: row.Scope, LastUsedAt: row.LastUsedAt, DecayDays: days}
		ok, err := r.decayOne(ctx, snap, cutoff, now)
		if err != nil {
			return removed, err
		}
		if ok {
			removed++
		}
	}
	if removed > 0 {
		r.auth.reset() // committed: what decayed is refused from the next request
		r.seatChanged()
	}
	return removed, nil
}

// decayOne removes one seat permission if it is still unused since cutoff
// (a use racing the run keeps it).
func (r *Runtime) decayOne(ctx context.Context, snap decaySnapshot, cutoff, now time.Time) (bool, error) {
	done := false
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&models.SeatPermission{SeatID: snap.Seat, PermissionID: snap.Permission}).Error; err != nil {
			return err
		}
		a := &act{}
		a.target(snap.Seat, snap.User, snap.Role, snap.Permission)
		unused := "never used"
		if snap.LastUsedAt != nil {
			unused = "last used " + snap.LastUsedAt.Format("2006-01-02")
		}
		reason := fmt.Sprintf("%s %s unused past %d days (%s)", snap.Verb, snap.Scope, snap.DecayDays, unused)
		rec := r.actionRecord(System, decayVerb, a, VerdictAllowed, reason)
		ch := models.Change{ID: changeID(now)}
		res := tx.Model(&models.SeatPermission{}).
			Where("seat_id = ? AND permission_id = ? AND removed_at IS NULL AND (last_used_at IS NULL OR last_used_at <= ?)", snap.Seat, snap.Permission, cutoff).
			Updates(map[string]any{"removed_at": now, "removed_by": ch.ID})
		if res.Error != nil || res.RowsAffected != 1 {
			return res.Error
		}
		if err := tx.Create(&rec).Error; err != nil {
			return err
		}
		before := snap
		after := snap
		after.RemovedAt = &now
		// The Change is the one removed_by names, and it names its Action.
		ch.Kind, ch.Subject, ch.ActionID = ChangeDecay, snap.Seat, rec.ID
		ch.Summary = fmt.Sprintf("decay removed %s %s from %s (role %s): %s", snap.Verb, snap.Scope, snap.Email, snap.RoleName, reason)
		if _, err := r.recordChangeRow(ctx, tx, System, ch, before, after); err != nil {
			return err
		}
		done = true
		return nil
	})
	return done, err
}

// undoDecay gives the seat its permission back, its use counted from now so
// the next night does not take it again; p must be entitled to grant it.
func undoDecay(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	if !p.Can("Seat.create") {
		return nil, denied(p, "Seat.create", "undoing decay gives a seat its permission back: that needs Seat.create")
	}
	var snap decaySnapshot
	if err := decodeSide(c.BeforeJSON, &snap); err != nil {
		return nil, err
	}
	var perm models.Permission
	if err := tx.First(&perm, "id = ?", snap.Permission).Error; err != nil {
		return nil, conflict("not_undoable", "the role no longer holds this permission")
	}
	if err := r.mayGrantAll(ctx, p, []models.Permission{perm}); err != nil {
		return nil, err
	}
	now := r.now()
	res := tx.Model(&models.SeatPermission{}).Where("seat_id = ? AND permission_id = ? AND removed_at IS NOT NULL", snap.Seat, snap.Permission).
		Updates(map[string]any{"removed_at": nil, "removed_by": "", "last_used_at": now})
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected != 1 {
		return nil, conflict("not_undoable", "the seat is gone or already holds the permission again")
	}
	after := snap
	after.RemovedAt = nil
	after.LastUsedAt = &now
	return after, nil
}

func init() { changeUndoers[ChangeDecay] = undoDecay }
