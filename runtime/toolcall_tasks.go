package runtime

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// An MCP task (protocol revision 2025-11-25) is a tool call seen by the
// principal that made it, on the session's endpoint: the task id is the
// call's id. These verbs are ToolCall.get and ToolCall.list narrowed to the
// caller's own calls in one session, so one agent's token cannot read, wait
// on or list another's calls through the task methods, and a call made in
// another session is not found here even by its own maker.

// OwnToolCall is ToolCall.get for a call p made in session; any other call,
// whoever may read it elsewhere, is not found.
func (r *Runtime) OwnToolCall(ctx context.Context, p Principal, session, id string) (ToolCallView, error) {
	var out ToolCallView
	err := r.run(ctx, p, "ToolCall.get", func(a *act) error {
		v, err := r.ownCall(ctx, p, session, id)
		out = v
		return err
	}, id)
	return out, err
}

// OwnToolCallWait is OwnToolCall that waits up to d, or until ctx ends, for
// the call to finish; checked and recorded once, however long it waits. Its
// end leaves the call as it is: a call waiting for an approver keeps waiting.
// seen, when set, is given the call each time it is read while open (on
// each of its events, and every few seconds), so the caller can pass its
// changes on and keep its own request alive.
func (r *Runtime) OwnToolCallWait(ctx context.Context, p Principal, session, id string, d time.Duration, seen func(ToolCallView)) (ToolCallView, error) {
	v, err := r.OwnToolCall(ctx, p, session, id)
	if err != nil || !v.Open() {
		return v, err
	}
	matters := callOrSessionChanged(id, session)
	err = r.waitFor(ctx, d, matters, matters, func() (bool, error) {
		var err error
		v, err = r.callByID(ctx, id)
		if err == nil && v.Open() && seen != nil {
			seen(v)
		}
		return err != nil || !v.Open(), err
	})
	return v, err
}

func (r *Runtime) ownCall(ctx context.Context, p Principal, session, id string) (ToolCallView, error) {
	if _, err := r.loadSession(ctx, p, session); err != nil {
		return ToolCallView{}, notFound("tool call", id)
	}
	var n int64
	if err := r.db.WithContext(ctx).Model(&models.ToolCall{}).
		Where("id = ? AND session_id = ? AND by_kind = ? AND by_id = ?", id, session, string(p.Kind), p.ID).Count(&n).Error; err != nil {
		return ToolCallView{}, err
	}
	if n == 0 {
		return ToolCallView{}, notFound("tool call", id)
	}
	return r.callByID(ctx, id)
}

// OwnToolCallList is ToolCall.list narrowed to the calls p made in session,
// newest first, a page of limit (MaxPageSize at most) after the cursor.
func (r *Runtime) OwnToolCallList(ctx context.Context, p Principal, session, cursor string, limit int) ([]ToolCallView, PageLinks, error) {
	out := []ToolCallView{}
	var links PageLinks
	err := r.run(ctx, p, "ToolCall.list", func(a *act) error {
		c, err := ParseCursor(cursor)
		if err != nil {
			return err
		}
		if limit, err = pageLimit(limit, PageSize); err != nil {
			return err
		}
		if _, err := r.loadSession(ctx, p, session); err != nil {
			return err
		}
		q := r.db.WithContext(ctx).Where("session_id = ? AND by_kind = ? AND by_id = ?", session, string(p.Kind), p.ID)
		var rows []models.ToolCall
		if err := keyset(q, "created_at", "id", c, true, limit).Find(&rows).Error; err != nil {
			return err
		}
		rows, links = pageOf(rows, c, limit, func(c models.ToolCall) (time.Time, string) { return c.CreatedAt, c.ID })
		for _, row := range rows {
			out = append(out, callView(row))
		}
		return nil
	}, session)
	if errors.Is(err, gorm.ErrRecordNotFound) {
		err = notFound("session", session)
	}
	return out, links, err
}
