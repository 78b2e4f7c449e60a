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
	"github.com/subako/subako/runtime/tools"
)

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// ApprovalView is an approval with who decided it and why.
type ApprovalView struct {
	ID        string     `json:"id"`
	Call      string     `json:"call"`
	Session   string     `json:"session"`
	State     string     `json:"state"`
	Scope     string     `json:"scope"`
	Reason    string     `json:"reason"`
	DecidedBy string     `json:"decided_by"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at"`
	ExpiresAt time.Time  `json:"expires_at"`
}

func approvalView(a models.Approval) ApprovalView {
	return ApprovalView{ID: a.ID, Call: a.ToolCallID, Session: a.SessionID, State: a.State, Scope: a.Scope, Reason: a.Reason,
		DecidedBy: a.DecidedByLabel, CreatedAt: a.CreatedAt, DecidedAt: a.DecidedAt, ExpiresAt: a.ExpiresAt}
}

// DecisionInput is Approval.approve's or Approval.deny's body.
type DecisionInput struct {
	Approval string `json:"approval" param:"approval"`
	Reason   string `json:"reason" form:"reason"`
	Scope    string `json:"scope" form:"scope"` // call (default) or session
}

// ApprovalApprove is Approval.approve: the call runs. With scope "session" the
// tool is allowed for the rest of this session without asking.
func (r *Runtime) ApprovalApprove(ctx context.Context, p Principal, in DecisionInput) (ApprovalView, error) {
	return r.decide(ctx, p, "Approval.approve", in, ApprovalApproved)
}

// ApprovalDeny is Approval.deny: the call is refused with the approver's reason.
func (r *Runtime) ApprovalDeny(ctx context.Context, p Principal, in DecisionInput) (ApprovalView, error) {
	return r.decide(ctx, p, "Approval.deny", in, ApprovalDenied)
}

func (r *Runtime) decide(ctx context.Context, p Principal, verb string, in DecisionInput, state string) (ApprovalView, error) {
	var out ApprovalView
	var call models.ToolCall
	err := r.runIn(ctx, p, verb, r.decisionCheckInput(ctx, in.Approval), func(a *act) error {
		if in.Scope == "" {
			in.Scope = "call"
		}
		if in.Scope != "call" && in.Scope != "session" {
			return invalid("scope", "invalid_scope", "scope must be call or session")
		}
		if in.Scope == "session" && state == ApprovalDenied {
			return invalid("scope", "invalid_scope", "a denial applies to one call: scope must be call")
		}
		if len(in.Reason) > 2000 {
			return invalid("reason", "reason_too_long", "reason must be at most 2,000 characters")
		}
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var ap models.Approval
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&ap, "id = ?", in.Approval).Error; err != nil {
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return notFound("approval", in.Approval)
				}
				return err
			}
			a.target(ap.ID, ap.ToolCallID)
			if err := tx.First(&call, "id = ?", ap.ToolCallID).Error; err != nil {
				return err
			}
			if err := r.checkDecision(p, ap, call); err != nil {
				return err
			}
			now := r.now()
			// The conditional update is what makes the first decision win.
			res := tx.Model(&models.Approval{}).Where("id = ? AND state = ?", ap.ID, ApprovalPending).Updates(map[string]any{
				"state": state, "scope": in.Scope, "reason": strings.TrimSpace(in.Reason), "decided_by": p.ID, "decided_by_label": p.Label, "decided_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return r.alreadyDecided(tx, ap.ID)
			}
			if err := r.applyDecision(tx, p, call, state, in, now); err != nil {
				return err
			}
			// The decision's Action is written with it, as a call's is
			// (newCall): a crash between the two would leave a call
			// approved, and run, with no decision on the audit log.
			rec := r.actionRecord(p, verb, a, VerdictAllowed, "")
			if err := tx.Create(&rec).Error; err != nil {
				return err
			}
			a.recorded = true
			return tx.First(&ap, "id = ?", ap.ID).Error
		})
	}, in.Approval)
	if err != nil {
		return out, err
	}
	v, _ := r.callByID(ctx, call.ID)
	if v.Approval != nil {
		out = *v.Approval
	}
	r.publish(Event{Kind: "approval", ID: call.ID, SessionID: call.SessionID, State: state})
	r.publish(Event{Kind: "call", ID: call.ID, SessionID: call.SessionID, State: v.Status})
	if state == ApprovalApproved {
		go r.execute(call.ID)
	}
	return out, nil
}

// checkDecision holds the rules of who may decide what, and when.
func (r *Runtime) checkDecision(p Principal, ap models.Approval, call models.ToolCall) error {
	if ownCall(p, call.ByKind, call.ByID) {
		return forbidden("own_call", "you made this call yourself: another person must decide it")
	}
	if ap.State == ApprovalPending && !r.now().Before(ap.ExpiresAt) {
		return conflict("approval_expired", "this approval expired before it was decided")
	}
	return nil
}

// ownCall is the four-eyes rule: a person never decides a call they made.
func ownCall(p Principal, byKind, byID string) bool {
	return p.Kind == PrincipalUser && byKind == string(PrincipalUser) && byID == p.ID
}

func (r *Runtime) alreadyDecided(tx *gorm.DB, id string) error {
	var ap models.Approval
	tx.First(&ap, "id = ?", id)
	if ap.State == ApprovalCancelled {
		return conflict("call_cancelled", fmt.Sprintf("the caller cancelled this call at %s: it will never run", ap.DecidedAt.UTC().Format("Jan 2, 2006 15:04:05 UTC")))
	}
	who := ap.DecidedByLabel
	if who == "" {
		who = "the server"
	}
	return conflict("already_decided", fmt.Sprintf("already %s by %s at %s", ap.State, who, ap.DecidedAt.UTC().Format("Jan 2, 2006 15:04:05 UTC")))
}

func (r *Runtime) applyDecision(tx *gorm.DB, p Principal, call models.ToolCall, state string, in DecisionInput, now time.Time) error {
	q := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ?", call.ID, CallAwaitingApproval)
	if state == ApprovalDenied {
		reason := "denied by " + p.Label
		if r := strings.TrimSpace(in.Reason); r != "" {
			reason += ": " + r
		}
		return q.Updates(map[string]any{"status": CallRefused, "reason": reason, "finished_at": now}).Error
	}
	if err := q.Updates(map[string]any{"status": CallQueued, "reason": "approved by " + p.Label}).Error; err != nil {
		return err
	}
	if in.Scope != "session" {
		return nil
	}
	return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&models.SessionRule{ID: newID("rule"), SessionID: call.SessionID,
		Tool: call.Tool, Policy: tools.PolicyAllow, CreatedBy: p.ID, CreatedAt: now}).Error
}
