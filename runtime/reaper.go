package runtime

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Start registers this replica, recovers what a restart interrupted and
// runs the timers that end waiting: approvals that expire and client calls
// nobody answers. All timers are derived from timestamps in the database, so
// a restart resumes them; with several replicas on one database each timer
// runs under a lease (leases.go), on one replica at a time.
func (r *Runtime) Start(ctx context.Context, every time.Duration) {
	ctx, r.stop = context.WithCancel(ctx)
	if err := r.registerReplica(ctx); err != nil {
		r.opts.Log.Error("runtime: replica not registered; its calls look dead to other replicas", "err", err)
	}
	r.startBus(ctx) // events_pg.go: events from the other replicas
	r.recover(ctx)
	go r.heartbeatLoop(ctx)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.runOnce(ctx, "reaper", reaperLease(every), r.Reap)
			}
		}
	}()
}

// reaperLease outlasts several ticks, and a dead holder's heartbeat too.
func reaperLease(every time.Duration) time.Duration { return max(5*every, 10*time.Second) }

// recover fails calls that were running when this replica (or a dead one)
// stopped (their outcome is unknown) and runs calls approved but not yet
// started.
func (r *Runtime) recover(ctx context.Context) {
	r.interruptRunning(ctx, true)
	var queued []string
	r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("status = ?", CallQueued).Pluck("id", &queued)
	for _, id := range queued {
		go r.execute(id)
	}
}

// interrupted is the error of a call a restart interrupted.
const interrupted = "interrupted: the server restarted while the call ran"

// interruptRunning marks the calls that were running on a replica that
// stopped interrupted (failed, outcome unknown), each with an Action saying
// so, in one transaction. Every call already has its ToolCall.create Action:
// it was written with the call. A live replica's running calls are left
// alone: only calls of a replica that is stopped, silent past
// ReplicaDeadAfter or unknown are taken; at start (own) also this replica's
// earlier run (same --replica-id) and calls recorded before replicas had
// ids. The periodic reaper leaves calls without an id alone: such a call
// can only come from before the upgrade, which the start already ended.
func (r *Runtime) interruptRunning(ctx context.Context, own bool) {
	since, err := r.liveSince(ctx)
	if err != nil {
		r.opts.Log.Error("runtime: find interrupted calls", "err", err)
		return
	}
	live := r.db.Model(&models.Replica{}).Select("id").Where("stopped_at IS NULL AND heartbeat_at > ?", since)
	q := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("status = ?", CallRunning)
	if own {
		q = q.Where("replica_id = ? OR replica_id NOT IN (?)", r.replica.ID, live)
	} else {
		q = q.Where("replica_id <> '' AND replica_id <> ? AND replica_id NOT IN (?)", r.replica.ID, live)
	}
	var ids []string
	if err := q.Pluck("id", &ids).Error; err != nil {
		r.opts.Log.Error("runtime: find interrupted calls", "err", err)
		return
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 500)]
		ids = ids[len(batch):]
		now := r.now()
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var calls []models.ToolCall
			if err := tx.Select("id", "session_id", "version_id").Where("id IN ? AND status = ?", batch, CallRunning).Find(&calls).Error; err != nil {
				return err
			}
			for _, c := range calls {
				res := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ?", c.ID, CallRunning).
					Updates(map[string]any{"status": CallFailed, "error": interrupted, "finished_at": now})
				if res.Error != nil {
					return res.Error
				}
				a := &act{version: c.VersionID}
				a.target(c.SessionID, c.ID)
				rec := r.actionRecord(System, "ToolCall.interrupt", a, VerdictFailed, interrupted)
				if err := tx.Create(&rec).Error; err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			r.opts.Log.Error("runtime: mark interrupted calls", "err", err)
			return
		}
	}
}

// Reap ends what has waited too long. Exported so tests with a fake clock can
// run it at once.
func (r *Runtime) Reap(ctx context.Context) {
	now := r.now()
	r.interruptRunning(ctx, false)
	var expired []models.Approval
	r.db.WithContext(ctx).Where("state = ? AND expires_at <= ?", ApprovalPending, now).Find(&expired)
	for _, ap := range expired {
		// The approval and its call change together, or not at all: a crash
		// between the two would leave a call waiting on an expired approval.
		expiredNow := false
		err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			res := tx.Model(&models.Approval{}).Where("id = ? AND state = ?", ap.ID, ApprovalPending).
				Updates(map[string]any{"state": ApprovalExpired, "decided_at": now, "reason": "approval expired"})
			if res.Error != nil || res.RowsAffected != 1 {
				return res.Error
			}
			expiredNow = true
			if err := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ?", ap.ToolCallID, CallAwaitingApproval).
				Updates(map[string]any{"status": CallRefused, "reason": "approval expired", "finished_at": now}).Error; err != nil {
				return err
			}
			// The audit log says who ended the wait: the system, once
			// (the conditional update above lets one replica win).
			a := &act{}
			a.target(ap.ID, ap.ToolCallID)
			rec := r.actionRecord(System, "Approval.expire", a, VerdictRefused, "approval expired")
			return tx.Create(&rec).Error
		})
		if err != nil {
			r.opts.Log.Error("runtime: expire approval", "approval", ap.ID, "err", err)
			continue
		}
		if expiredNow {
			r.publish(Event{Kind: "approval", ID: ap.ToolCallID, SessionID: ap.SessionID, State: ApprovalExpired})
			r.publish(Event{Kind: "call", ID: ap.ToolCallID, SessionID: ap.SessionID, State: CallRefused})
		}
	}
	// A call approved on a replica that died before starting it (or whose
	// write starting it failed) would stay queued for ever: start it here;
	// execute's conditional update lets one replica run it.
	var queued []string
	r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("status = ? AND id IN (?)", CallQueued,
		r.db.Model(&models.Approval{}).Select("tool_call_id").Where("state = ? AND decided_at <= ?", ApprovalApproved, now.Add(-queuedGrace))).
		Limit(100).Pluck("id", &queued)
	for _, id := range queued {
		go r.execute(id)
	}
	var stale []models.ToolCall
	r.db.WithContext(ctx).Where("status = ? AND started_at <= ?", CallWaitingClient, now.Add(-r.opts.ClientTimeout)).Find(&stale)
	for _, c := range stale {
		r.finishCall(ctx, c, CallWaitingClient, nil, timeoutError{r.opts.ClientTimeout})
	}
	r.decayIfDue(ctx)
	r.forgetReplicas(ctx)
}

// queuedGrace is how long after its approval a queued call is left to the
// replica that decided it before the reaper starts it.
const queuedGrace = 30 * time.Second

type timeoutError struct{ after time.Duration }

func (e timeoutError) Error() string {
	return "timed out: no client answered within " + e.after.String()
}
