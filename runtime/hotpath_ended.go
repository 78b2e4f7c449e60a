package runtime

import (
	"context"

	"github.com/subako/subako/models"
)

// endedSinceCheck tells whether the call's session ended after the caller
// checked it and before the call started: Session.end refuses the open calls
// it finds, and a call recorded just after it committed would otherwise run
// in the ended session. The session comes from memory unless a write
// changed it, so a warm call pays no statement for this.
func (r *Runtime) endedSinceCheck(ctx context.Context, call models.ToolCall) bool {
	s, err := r.hotSession(ctx, System, call.SessionID)
	return err == nil && s.State != SessionActive
}

// refuseEnded ends a started call as refused because its session ended,
// and returns the finished record (nil if it was no longer running).
func (r *Runtime) refuseEnded(ctx context.Context, call models.ToolCall) *models.ToolCall {
	now := r.now()
	const reason = "the session ended"
	var rows int64
	// Synchronous, like every finishing write: on PostgreSQL it is what
	// makes the opening record durable (hotpath_finish.go).
	err := r.hotWriteTx(func() error {
		res := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id = ? AND status = ?", call.ID, CallRunning).
			Updates(map[string]any{"status": CallRefused, "reason": reason, "finished_at": now})
		rows = res.RowsAffected
		return res.Error
	})
	if err != nil || rows != 1 {
		return nil
	}
	r.publish(Event{Kind: "call", ID: call.ID, SessionID: call.SessionID, State: CallRefused})
	final := call
	final.Status, final.Reason, final.FinishedAt = CallRefused, reason, &now
	return &final
}
