package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

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
	_, err := r.recordChangeRow(ctx, tx, p, kind, subject, summary, before, after, "")
	return err
}

func (r *Runtime) recordChangeRow(ctx context.Context, tx *gorm.DB, p Principal, kind, subject, summary string, before, after any, undoOf string) (models.Change, error) {
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
	c := models.Change{ID: newID("chg"), Kind: truncate(kind, 100), Subject: truncate(subject, 200), Summary: truncate(summary, 1000),
		ByKind: string(p.Kind), ByID: truncate(p.ID, 100), ByLabel: truncate(p.Label, 200),
		BeforeJSON: b, AfterJSON: a, CreatedAt: r.now(), UndoOf: undoOf}
	if err := tx.WithContext(ctx).Create(&c).Error; err != nil {
		return c, fmt.Errorf("runtime: record change: %w", err)
	}
	return c, nil
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
