package runtime

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// A Change is one change to who may do what (roles, seats, permissions,
// tokens, tenants, decay's nightly narrowing), with what its subject was
// before and became after. The Changes page lists them; Change.undo reverses
// the kinds that can be reversed.

// Kinds of Change. Other files add their own (tenant.create, token.create …);
// a kind without an undo (changeUndoers) is listed but cannot be undone.
const (
	ChangeRoleCreate = "role.create"
	ChangeRoleUpdate = "role.update"
	ChangeRoleDelete = "role.delete"
	ChangeSeatCreate = "seat.create"
	ChangeSeatDelete = "seat.delete"
	// ChangeDecay removes one seat's permission unused past its decay.
	ChangeDecay = "seat.decay"
	// ChangeUndo reverses another Change (undo_of).
	ChangeUndo = "change.undo"
)

// maxChangeJSON bounds what one side (before or after) of a Change keeps.
const maxChangeJSON = 64 << 10

// recordChange writes a Change in tx (the transaction of the write it
// describes, so a rolled-back write leaves no Change). before and after are
// marshalled to JSON (nil: nothing, as for a creation's before); a side
// larger than 64 KiB is an error rather than a Change cut in half. It returns
// nothing about the row: list it with Change.list.
func (r *Runtime) recordChange(ctx context.Context, tx *gorm.DB, p Principal, kind, subject, summary string, before, after any) error {
	_, err := r.recordChangeRow(ctx, tx, p, models.Change{Kind: kind, Subject: subject, Summary: summary}, before, after)
	return err
}

// recordChangeRow is recordChange of c's kind, subject, summary and, when
// set, its id, action and undo_of.
func (r *Runtime) recordChangeRow(ctx context.Context, tx *gorm.DB, p Principal, c models.Change, before, after any) (models.Change, error) {
	b, err := changeJSON(before)
	if err != nil {
		return models.Change{}, err
	}
	a, err := changeJSON(after)
	if err != nil {
		return models.Change{}, err
	}
	if tx == nil {
		tx = r.db.DB
	}
	if c.ID == "" {
		c.ID = changeID(r.now())
	}
	c.Kind, c.Subject, c.Summary = truncate(c.Kind, 100), truncate(c.Subject, 200), truncate(c.Summary, 1000)
	c.ByKind, c.ByID, c.ByLabel = string(p.Kind), truncate(p.ID, 100), truncate(p.Label, 200)
	c.BeforeJSON, c.AfterJSON, c.CreatedAt = b, a, r.now()
	if err := tx.WithContext(ctx).Create(&c).Error; err != nil {
		return c, fmt.Errorf("runtime: record change: %w", err)
	}
	return c, nil
}

// changeSeq orders Changes made in one clock tick by this process.
var changeSeq atomic.Uint32

// changeID is an id that sorts by time, then by order made here: the Changes
// page lists by (created_at, id), and two Changes of one request share a tick.
func changeID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("chg_%016x%08x%06x", now.UnixNano(), changeSeq.Add(1), b)
}

func changeJSON(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("runtime: change: %w", err)
	}
	if string(b) == "null" {
		return "", nil
	}
	if len(b) > maxChangeJSON {
		return "", invalid("change", "change_too_large", fmt.Sprintf("a change's before or after must be at most %d bytes, not %d", maxChangeJSON, len(b)))
	}
	return string(b), nil
}

// ChangeView is one Change as interfaces show it.
type ChangeView struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	Subject string          `json:"subject"`
	Summary string          `json:"summary"`
	ByKind  string          `json:"by_kind"`
	ByID    string          `json:"by_id"`
	By      string          `json:"by"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
	// Undoable says a Change.undo of it would be tried (its kind has an
	// undo and it was not undone); who may undo is still checked then.
	Undoable  bool       `json:"undoable"`
	UndoneAt  *time.Time `json:"undone_at,omitempty"`
	UndoneBy  string     `json:"undone_by,omitempty"`
	UndoOf    string     `json:"undo_of,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

func changeView(c models.Change) ChangeView {
	v := ChangeView{ID: c.ID, Kind: c.Kind, Subject: c.Subject, Summary: c.Summary, ByKind: c.ByKind, ByID: c.ByID, By: c.ByLabel,
		UndoneAt: c.UndoneAt, UndoneBy: c.UndoneBy, UndoOf: c.UndoOf, CreatedAt: c.CreatedAt}
	if c.BeforeJSON != "" && json.Valid([]byte(c.BeforeJSON)) {
		v.Before = json.RawMessage(c.BeforeJSON)
	}
	if c.AfterJSON != "" && json.Valid([]byte(c.AfterJSON)) {
		v.After = json.RawMessage(c.AfterJSON)
	}
	v.Undoable = c.UndoneAt == nil && changeUndoers[c.Kind] != nil
	return v
}

// changeUndoers reverse a Change of their kind inside tx, as p; each
// returns what the subject became (the undo's after). Filled by the files
// that own the kinds (roles.go, seats.go, decay.go).
var changeUndoers = map[string]func(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error){}

// ChangeFilter narrows Change.list.
type ChangeFilter struct {
	Kind    string `json:"kind" query:"kind"`
	Subject string `json:"subject" query:"subject"`
	Limit   int    `json:"limit" query:"limit"`
	Before  string `json:"before" query:"before"` // a Change id: list those older than it
}

// MaxChangeList bounds one page of Change.list.
const MaxChangeList = 200

// ChangeList is Change.list: the newest first, f.Limit (50 by default, at
// most 200) at a time.
func (r *Runtime) ChangeList(ctx context.Context, p Principal, f ChangeFilter) ([]ChangeView, error) {
	out := []ChangeView{}
	err := r.run(ctx, p, "Change.list", func(a *act) error {
		limit := f.Limit
		switch {
		case limit == 0:
			limit = 50
		case limit < 0 || limit > MaxChangeList:
			return invalid("limit", "invalid_limit", fmt.Sprintf("limit must be from 1 to %d, not %d", MaxChangeList, f.Limit))
		}
		q := r.db.WithContext(ctx).Model(&models.Change{})
		if f.Kind != "" {
			q = q.Where("kind = ?", f.Kind)
		}
		if f.Subject != "" {
			q = q.Where("subject = ?", f.Subject)
		}
		if p.TenantID != "" {
			// A tenant's people see the Changes their tenant's people made
			// and decay's of their seats, nothing of the operator's.
			people := r.db.Model(&models.User{}).Select("id").Where("tenant_id = ?", p.TenantID)
			seats := r.db.Model(&models.Seat{}).Select("id").Where("user_id IN (?)", people)
			q = q.Where("by_id IN (?) OR (by_kind = ? AND subject IN (?))", people, string(PrincipalSystem), seats)
		}
		var after Cursor
		if f.Before != "" {
			var b models.Change
			if err := r.db.WithContext(ctx).First(&b, "id = ?", f.Before).Error; err != nil {
				return invalid("before", "invalid_cursor", fmt.Sprintf("before must name a Change, not %q", f.Before))
			}
			after = Cursor{At: b.CreatedAt, ID: b.ID}
		}
		var rows []models.Change
		if err := changePage(q, after, limit).Find(&rows).Error; err != nil {
			return fmt.Errorf("runtime: list changes: %w", err)
		}
		for _, c := range rows {
			out = append(out, changeView(c))
		}
		return nil
	})
	return out, err
}

// changePage is one page of q's Changes older than after (none: the
// newest), as Change.list reads them: a seek of migration 0038's indexes.
func changePage(q *gorm.DB, after Cursor, limit int) *gorm.DB {
	return keyset(q, "created_at", "id", after, true, limit).Limit(limit)
}

// ChangeUndo is Change.undo: the Change is reversed by another Change (its
// undo_of), by someone entitled to grant what it puts back (undoers check).
// A Change is undone once; an undo itself is not undone (make the change again).
func (r *Runtime) ChangeUndo(ctx context.Context, p Principal, id string) (ChangeView, error) {
	var out ChangeView
	err := r.run(ctx, p, "Change.undo", func(a *act) error {
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var c models.Change
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&c, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound("change", id)
			} else if err != nil {
				return err
			}
			if p.TenantID != "" && !r.tenantChange(tx, p, c) {
				return notFound("change", id)
			}
			a.target(c.ID, c.Subject)
			if c.UndoneAt != nil {
				return conflict("already_undone", fmt.Sprintf("change %s was undone at %s", c.ID, c.UndoneAt.Format(time.RFC3339)))
			}
			undo := changeUndoers[c.Kind]
			if undo == nil {
				return conflict("not_undoable", fmt.Sprintf("a %s change cannot be undone: make the change again instead", c.Kind))
			}
			after, err := undo(r, ctx, tx, p, c)
			if err != nil {
				return err
			}
			res := tx.Model(&models.Change{}).Where("id = ? AND undone_at IS NULL", c.ID).Updates(map[string]any{"undone_at": r.now(), "undone_by": truncate(p.Label, 200)})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return conflict("already_undone", fmt.Sprintf("change %s was undone meanwhile", c.ID))
			}
			var before any
			if c.AfterJSON != "" {
				before = json.RawMessage(c.AfterJSON)
			}
			u, err := r.recordChangeRow(ctx, tx, p, models.Change{Kind: ChangeUndo, Subject: c.Subject, Summary: "undid: " + c.Summary, UndoOf: c.ID}, before, after)
			out = changeView(u)
			return err
		})
		r.auth.reset() // committed: what came back (or went) counts from the next request
		if err == nil {
			r.seatChanged()
		}
		return err
	}, id)
	return out, err
}

// tenantChange reports whether a tenant's person may see c (ChangeList's rule).
func (r *Runtime) tenantChange(tx *gorm.DB, p Principal, c models.Change) bool {
	if c.ByKind == string(PrincipalSystem) {
		var seat models.Seat
		return tx.First(&seat, "id = ?", c.Subject).Error == nil && r.sameTenant(tx, p, seat.UserID)
	}
	return r.sameTenant(tx, p, c.ByID)
}

// decodeSide reads a Change's before or after into v.
func decodeSide(s string, v any) error {
	if s == "" {
		return conflict("not_undoable", "the change kept nothing to put back")
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("runtime: read change: %w", err)
	}
	return nil
}

func init() {
	changeUndoers[ChangeRoleCreate] = undoRoleCreate
	changeUndoers[ChangeRoleUpdate] = undoRoleUpdate
	changeUndoers[ChangeRoleDelete] = undoRoleDelete
	changeUndoers[ChangeSeatCreate] = undoSeatCreate
	changeUndoers[ChangeSeatDelete] = undoSeatDelete
}

// undoRoleCreate deletes the role (and its seats), if p may delete roles.
func undoRoleCreate(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	if !p.Can("Role.delete") {
		return nil, denied(p, "Role.delete", "undoing a role's creation deletes it: that needs Role.delete")
	}
	var n int64
	if err := tx.Model(&models.Role{}).Where("id = ?", c.Subject).Count(&n).Error; err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, conflict("not_undoable", "the role is already gone")
	}
	return nil, deleteRole(tx, c.Subject)
}

// undoRoleUpdate puts the role's name, description, decay and permissions
// back as they were; p must be entitled to grant each permission it restores.
func undoRoleUpdate(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	var before roleSnapshot
	if err := decodeSide(c.BeforeJSON, &before); err != nil {
		return nil, err
	}
	role, err := findRole(tx.Clauses(clause.Locking{Strength: "UPDATE"}), p, c.Subject)
	if err != nil {
		return nil, conflict("not_undoable", "the role is gone: undo its deletion first")
	}
	now, err := loadRoleSnapshot(tx, role)
	if err != nil {
		return nil, err
	}
	if err := r.mayGrantAll(ctx, p, before.Permissions); err != nil {
		return nil, err
	}
	role.Name, role.Description, role.DecayDays, role.UpdatedAt = before.Role.Name, before.Role.Description, before.Role.DecayDays, r.now()
	if err := uniqueRoleName(tx, role); err != nil {
		return nil, err
	}
	if err := saveRole(tx, role); err != nil {
		return nil, err
	}
	// Permissions back by id: a seat's use and decay of each stay its own.
	keep := map[string]bool{}
	for _, pm := range before.Permissions {
		keep[pm.ID] = true
	}
	var gone []string
	for _, pm := range now.Permissions {
		if !keep[pm.ID] {
			gone = append(gone, pm.ID)
		}
		delete(keep, pm.ID)
	}
	var back []models.Permission
	for _, pm := range before.Permissions {
		if keep[pm.ID] {
			back = append(back, pm)
		}
	}
	if err := changeRolePermissions(tx, role.ID, gone, back); err != nil {
		return nil, err
	}
	return loadRoleSnapshot(tx, role)
}

// undoRoleDelete brings the role back with its permissions and seats.
func undoRoleDelete(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	if !p.Can("Role.create") {
		return nil, denied(p, "Role.create", "undoing a role's deletion creates it again: that needs Role.create")
	}
	var before roleSnapshot
	if err := decodeSide(c.BeforeJSON, &before); err != nil {
		return nil, err
	}
	if err := r.mayGrantAll(ctx, p, before.Permissions); err != nil {
		return nil, err
	}
	if err := uniqueRoleName(tx, before.Role); err != nil {
		return nil, err
	}
	if err := tx.Create(&before.Role).Error; err != nil {
		return nil, err
	}
	if len(before.Permissions) > 0 {
		if err := tx.Create(&before.Permissions).Error; err != nil {
			return nil, err
		}
	}
	var seats []models.Seat
	for _, s := range before.Seats {
		var n int64
		tx.Model(&models.User{}).Where("id = ?", s.UserID).Count(&n)
		if n == 1 { // a person removed since is not seated again
			seats = append(seats, s)
		}
	}
	if len(seats) > 0 {
		if err := tx.Create(&seats).Error; err != nil {
			return nil, err
		}
		var sps []models.SeatPermission
		for _, sp := range before.SeatPerms {
			for _, s := range seats {
				if s.ID == sp.SeatID {
					sps = append(sps, sp)
				}
			}
		}
		if len(sps) > 0 {
			if err := tx.CreateInBatches(&sps, 200).Error; err != nil {
				return nil, err
			}
		}
	}
	return loadRoleSnapshot(tx, before.Role)
}

// undoSeatCreate unseats the person again.
func undoSeatCreate(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	if !p.Can("Seat.delete") {
		return nil, denied(p, "Seat.delete", "undoing a seat unseats the person: that needs Seat.delete")
	}
	if err := tx.Where("seat_id = ?", c.Subject).Delete(&models.SeatPermission{}).Error; err != nil {
		return nil, err
	}
	res := tx.Where("id = ?", c.Subject).Delete(&models.Seat{})
	if res.Error == nil && res.RowsAffected == 0 {
		return nil, conflict("not_undoable", "the seat is already gone")
	}
	return nil, res.Error
}

// undoSeatDelete seats the person again, with the seat's use and decay as
// they were, if p may grant the role's permissions.
func undoSeatDelete(r *Runtime, ctx context.Context, tx *gorm.DB, p Principal, c models.Change) (any, error) {
	if !p.Can("Seat.create") {
		return nil, denied(p, "Seat.create", "undoing an unseating seats the person again: that needs Seat.create")
	}
	var before seatSnapshot
	if err := decodeSide(c.BeforeJSON, &before); err != nil {
		return nil, err
	}
	var n int64
	tx.Model(&models.User{}).Where("id = ?", before.Seat.UserID).Count(&n)
	if n == 0 {
		return nil, conflict("not_undoable", "the person has been removed")
	}
	role, err := findRole(tx, p, before.Seat.RoleID)
	if err != nil {
		return nil, conflict("not_undoable", "the role is gone: undo its deletion first")
	}
	var perms []models.Permission
	if err := tx.Where("holder_kind = ? AND holder_id = ?", models.HolderRole, role.ID).Find(&perms).Error; err != nil {
		return nil, err
	}
	if err := r.mayGrantAll(ctx, p, perms); err != nil {
		return nil, err
	}
	if err := tx.Model(&models.Seat{}).Where("user_id = ? AND role_id = ?", before.Seat.UserID, role.ID).Count(&n).Error; err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, conflict("already_seated", fmt.Sprintf("%s fills role %s again already", before.Email, role.Name))
	}
	if err := tx.Create(&before.Seat).Error; err != nil {
		return nil, err
	}
	if len(before.SeatPerms) > 0 {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&before.SeatPerms).Error; err != nil {
			return nil, err
		}
	}
	if err := addSeatPermissions(tx, role.ID, perms); err != nil {
		return nil, err
	}
	return before, nil
}

// mayGrantAll refuses, naming the first permission p may not grant.
func (r *Runtime) mayGrantAll(ctx context.Context, p Principal, perms []models.Permission) error {
	for _, pm := range perms {
		s, err := ParseScope(pm.Scope)
		if err != nil || !r.mayGrant(ctx, p, pm.Verb, s) {
			return &Error{Kind: KindForbidden, Code: "permission_denied", Title: "Permission denied", MissingPermission: pm.Verb + " " + pm.Scope,
				Detail: fmt.Sprintf("undoing this gives %s %s, which you do not hold yourself", pm.Verb, pm.Scope)}
		}
	}
	return nil
}
