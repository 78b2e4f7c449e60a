package runtime

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
)

// ApprovalCancelled is an approval whose call its caller cancelled before
// anyone decided it: it leaves every queue and can never be approved.
const ApprovalCancelled = "cancelled"

// CallCancelledReason is the reason (and, for a call cancelled while it ran,
// the error) of a cancelled call. A cancelled call keeps the existing final
// statuses: refused when it had not started (it never ran), failed when it
// was running (it ran, and was stopped).
const CallCancelledReason = "cancelled by the caller"

// maxCancelReason bounds the caller's words kept with a cancellation.
const maxCancelReason = 500

// Cancelled reports whether the call ended because its caller cancelled it.
func (v ToolCallView) Cancelled() bool {
	return (v.Status == CallRefused || v.Status == CallFailed) && strings.HasPrefix(v.Reason, CallCancelledReason)
}

// CancelInput is ToolCall.cancel's body.
type CancelInput struct {
	Call   string `json:"call" param:"call"`
	Reason string `json:"reason"`
}

// ToolCallCancel is ToolCall.cancel: the caller no longer wants the call.
// A call waiting for an approver is refused and its approval cancelled (it
// leaves every open queue at once, and approving it later answers 409
// call_cancelled); a queued or client-waiting call is refused; a running
// call ends failed and is stopped at once on whichever replica runs it (the
// call event crosses replicas, events_pg.go; a dead replica runs nothing,
// and the reaper interrupts only calls still running). Either way its
// reason reads "cancelled by the caller". Only the caller, or a person who
// may end the session, may cancel; a finished call answers 409 call_finished.
//
// The MCP endpoint calls it when a client cancels its request or goes away;
// MCP Tasks' tasks/cancel calls it too. A JSON API caller whose wait_seconds
// ran out has not cancelled anything: the call stays open.
func (r *Runtime) ToolCallCancel(ctx context.Context, p Principal, callID, reason string) (ToolCallView, error) {
	var call models.ToolCall
	var approval *models.Approval
	var status string
	err := r.run(ctx, p, "ToolCall.cancel", func(a *act) error {
		reason = strings.TrimSpace(reason)
		if n := utf8.RuneCountInString(reason); n > maxCancelReason {
			return invalid("reason", "reason_too_long", "reason must be at most 500 characters")
		}
		if err := r.db.WithContext(ctx).First(&call, "id = ?", callID).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound("tool call", callID)
			}
			return err
		}
		if _, err := r.loadSession(ctx, p, call.SessionID); err != nil {
			return notFound("tool call", callID)
		}
		a.version = call.VersionID
		if !mayCancel(p, call) {
			return forbidden("not_your_call", "only the caller of a call, or a person who may end its session, can cancel it")
		}
		why := CallCancelledReason
		if reason != "" {
			why += ": " + reason
		}
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var ap models.Approval
			found := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&ap, "tool_call_id = ?", callID).Error == nil
			a.target(ap.ID)
			if err := tx.First(&call, "id = ?", callID).Error; err != nil {
				return err
			}
			if finalStatus(call.Status) {
				return conflict("call_finished", "the call already ended "+call.Status+": there is nothing to cancel")
			}
			now := r.now()
			if found && ap.State == ApprovalPending {
				res := tx.Model(&models.Approval{}).Where("id = ? AND state = ?", ap.ID, ApprovalPending).Updates(map[string]any{
					"state": ApprovalCancelled, "reason": why, "decided_by": p.ID, "decided_by_label": p.Label, "decided_at": now})
				if res.Error != nil {
					return res.Error
				}
				if res.RowsAffected == 1 {
					ap.State = ApprovalCancelled
					approval = &ap
				}
			}
			upd := map[string]any{"status": CallRefused, "reason": why, "finished_at": now}
			from := []string{CallQueued, CallAwaitingApproval, CallWaitingClient}
			if call.Status == CallRunning {
				started := call.CreatedAt
				if call.StartedAt != nil {
					started = *call.StartedAt
				}
				upd = map[string]any{"status": CallFailed, "reason": why, "error": why, "finished_at": now,
					"duration_ms": now.Sub(started).Milliseconds()}
				from = []string{CallRunning}
			}
			res := tx.Model(&models.ToolCall{}).Where("id = ? AND status IN ?", callID, from).Updates(upd)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				// It moved on between the read and the write (locked rows
				// make this rare): say what it is now.
				return conflict("call_finished", "the call changed while it was being cancelled; ToolCall.get has its state")
			}
			status = upd["status"].(string)
			rec := r.actionRecord(p, "ToolCall.cancel", a, VerdictAllowed, why)
			if err := tx.Create(&rec).Error; err != nil {
				return err
			}
			a.recorded = true
			return nil
		})
	}, callID)
	if err != nil {
		return ToolCallView{}, err
	}
	// Stop the tool if this replica runs it. Another replica running it
	// stops it when the call event below reaches it (deliverRemote), or at
	// its next look at its running calls' records (stopCancelledElsewhere).
	r.stopRunning(callID)
	if approval != nil {
		r.publish(Event{Kind: "approval", ID: callID, SessionID: call.SessionID, State: ApprovalCancelled})
	}
	r.publish(Event{Kind: "call", ID: callID, SessionID: call.SessionID, State: status})
	return r.callByID(context.WithoutCancel(ctx), callID)
}

// mayCancel: the caller itself, or a person who may end the session.
func mayCancel(p Principal, call models.ToolCall) bool {
	if call.ByKind == string(p.Kind) && call.ByID == p.ID {
		return true
	}
	return p.Kind != PrincipalSession && p.Can("Session.end")
}

// trackRunning gives a running call its own context, cancelled by
// ToolCallCancel (here, or on another replica: stopRunning); done forgets
// it.
func (r *Runtime) trackRunning(ctx context.Context, callID string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	r.running.Store(callID, cancel)
	return ctx, func() {
		r.running.Delete(callID)
		cancel()
	}
}

// stopRunning cancels call id's context if this replica runs it, and
// reports whether it did.
func (r *Runtime) stopRunning(callID string) bool {
	stop, ok := r.running.Load(callID)
	if ok {
		stop.(context.CancelFunc)()
	}
	return ok
}

// stopCancelledElsewhere stops this replica's running calls whose record is
// already final: another replica cancelled them (or ended their session)
// and its event was lost, say while the listener reconnected. It runs at
// each heartbeat and after a reconnect: one query, and only while calls run.
func (r *Runtime) stopCancelledElsewhere(ctx context.Context) {
	var ids []string
	r.running.Range(func(k, _ any) bool {
		ids = append(ids, k.(string))
		return len(ids) < 1000
	})
	if len(ids) == 0 {
		return
	}
	var ended []string
	if err := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id IN ? AND status IN ?", ids,
		[]string{CallSucceeded, CallFailed, CallRefused}).Pluck("id", &ended).Error; err != nil {
		return
	}
	for _, id := range ended {
		if r.stopRunning(id) {
			r.opts.Log.Info("runtime: call ended elsewhere stopped here", "call", id)
		}
	}
}
