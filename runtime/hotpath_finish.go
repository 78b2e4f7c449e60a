package runtime

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// How a call that runs at once is made durable (issue 11; docs/design.md,
// "What a call's record survives").
//
// On PostgreSQL the opening record (the call, running, and its
// ToolCall.create Action, one statement) commits with synchronous_commit
// off: the commit is in the database, seen by every reader, and survives a
// kill -9 of Subako, but does not wait for its log to reach the disk. While
// the tool runs, a flusher makes it durable (pgflush.go: one tiny
// synchronous transaction whose flush covers every commit before it, shared
// by the calls that ask meanwhile). The caller is answered only once both
// the tool and that flush are done; the result then commits with
// synchronous_commit off too. So each call waits for a flush only as long
// as it outlasts the tool.
//
// What a crash of PostgreSQL itself (not of Subako) can lose: the opening
// record of a call still running, if its flush had not completed; the
// flush then fails, and Subako writes the whole record (the call as
// finished, and its Action) again, synchronously, once the database answers
// (finishStarted); only then is the caller answered. And the result of a
// call whose caller was answered, if PostgreSQL crashed before the WAL
// writer flushed it (within about 3 × wal_writer_delay, 600 ms by
// default): Subako, still running, writes the whole record again once the
// database answers (keepResult, pgflush.go); if Subako stopped too, the
// opening record is durable, so the next start finds the call running and
// records it interrupted (outcome unknown). A call whose caller was
// answered is always recorded, with its Action.
//
// On SQLite (WAL, synchronous NORMAL) no commit waits for a flush; the
// database file survives a kill -9 of Subako with every commit, and an
// operating-system crash or power loss can lose the last commits before a
// checkpoint, as it can any other write.

// writeFinish writes a call's result, if the call is still in status from,
// synchronously (on SQLite in the hot path's group commit, sqlitebatch.go).
func (r *Runtime) writeFinish(ctx context.Context, call models.ToolCall, from string, upd map[string]any) (*models.ToolCall, int64, error) {
	var rows int64
	err := r.hotWrite(ctx, false, func(db *gorm.DB) error {
		res := db.Model(&models.ToolCall{}).Where("id = ? AND status = ?", call.ID, from).Updates(upd)
		rows = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return nil, 0, err
	}
	return finished(call, upd), rows, nil
}

// Retrying a finishing write that failed: each try waits for the database
// to answer a ping first, and a connection lost again is waited for too (a
// database that went away is waited for, however long, until the server
// stops); a write that fails otherwise although the database answers is
// tried finishRetries times in all.
const (
	finishRetries    = 3
	finishRetryFirst = 50 * time.Millisecond
	finishRetryMax   = 2 * time.Second
)

// finishStarted records the result of a call ToolCall.create started (h
// holds its opening record) and returns the finished record for its caller,
// or nil when the call was no longer running. If the write fails (the
// database went away: on PostgreSQL it may have lost the opening record
// with it) the whole record, the call as finished and its Action, is
// written again once the database is back, and only then is the caller
// answered.
func (r *Runtime) finishStarted(ctx context.Context, call models.ToolCall, h *callHandle, out json.RawMessage, err error) *models.ToolCall {
	if h == nil {
		final, _ := r.finishCallRecord(ctx, call, CallRunning, out, err)
		return final
	}
	upd := r.finishUpdate(call, out, err)
	var final *models.ToolCall
	var rows int64
	var werr error
	if t := openingFlush(call.ID); t != nil {
		// PostgreSQL: the opening record was flushed while the tool ran
		// (pgflush.go); the result then commits without waiting for a
		// flush, and is made durable after the caller is answered.
		if werr = t.wait(); werr == nil {
			final, rows, werr = r.writeFinishAsync(ctx, call, CallRunning, upd)
			if werr == nil && rows == 1 {
				go r.keepResult(*final, h.opened)
			}
		}
	} else {
		final, rows, werr = r.writeFinish(ctx, call, CallRunning, upd)
	}
	if werr == nil {
		if rows != 1 {
			return nil
		}
		r.publish(Event{Kind: "call", ID: call.ID, SessionID: call.SessionID, State: final.Status})
		return final
	}
	r.opts.Log.Warn("runtime: finish call; writing the whole record again once the database answers", "call", call.ID, "err", werr)
	final = finished(call, upd)
	ctx = context.WithoutCancel(ctx)
	wait := finishRetryFirst
	for tries := 0; tries < finishRetries; {
		select {
		case <-r.hot.closing:
			r.opts.Log.Error("runtime: server stopping before a call's result could be written", "call", call.ID, "err", werr)
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, finishRetryMax)
		if !r.databaseAnswers(ctx) {
			continue
		}
		var wrote bool
		if wrote, werr = r.writeWholeCall(ctx, *final, h.opened); werr == nil {
			if !wrote {
				return nil // finished otherwise meanwhile (interrupted by a restart, say)
			}
			r.publish(Event{Kind: "call", ID: call.ID, SessionID: call.SessionID, State: final.Status})
			return final
		}
		if !errors.Is(werr, driver.ErrBadConn) {
			tries++ // a connection lost again is waited for; another error is not
		}
	}
	r.opts.Log.Error("runtime: finish call", "call", call.ID, "err", werr)
	return nil
}

// databaseAnswers pings the database, for at most 2 seconds.
func (r *Runtime) databaseAnswers(ctx context.Context) bool {
	sqlDB, err := r.db.DB.DB()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return sqlDB.PingContext(ctx) == nil
}

// writeWholeCall writes a finished call and its opening Action, durably, in
// one transaction: the call's row is inserted if the database lost it, or
// finished if it is still running; the Action is inserted if missing. It
// reports false when the call was found finished already.
func (r *Runtime) writeWholeCall(ctx context.Context, final models.ToolCall, opened models.Action) (bool, error) {
	var wrote bool
	err := r.hotWriteTx(func() error {
		return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			ins := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&final)
			if ins.Error != nil {
				return ins.Error
			}
			wrote = ins.RowsAffected == 1
			if !wrote {
				res := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ?", final.ID, CallRunning).Updates(map[string]any{
					"status": final.Status, "error": final.Error, "reason": final.Reason, "output": final.Output,
					"output_truncated": final.OutputTruncated, "finished_at": final.FinishedAt, "duration_ms": final.DurationMS})
				if res.Error != nil {
					return res.Error
				}
				wrote = res.RowsAffected == 1
			}
			return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&opened).Error
		})
	})
	return wrote, err
}

// readNow tells whether a call of t is run before it is recorded and then
// recorded once, finished, with its Action: one write instead of two. Only
// for a skill's read, which reads Subako's own memory (or its database) and
// changes nothing anywhere: a crash before the record leaves nothing done
// and its caller unanswered, as a crash before any call is recorded does.
func readNow(t offered) bool { return t.Kind == tools.KindSkill }
