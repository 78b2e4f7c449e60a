package runtime

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// The opening record's flush, on PostgreSQL, while the tool runs (issue 11;
// docs/design.md, "What a call's record survives").
//
// An allowed call's opening record (the call, running, and its
// ToolCall.create Action) commits with synchronous_commit off: it is in the
// database at once, seen by every reader, and survives a kill -9 of Subako,
// but its log may not have reached the disk yet. Right after that commit the
// call asks the flusher for a flush and its tool starts: the flusher runs
// one tiny synchronous transaction that writes to the log (a transactional
// logical-decoding message, which any role may emit and which touches no
// row), and since the log is one sequence, its flush makes every commit
// before it durable. Calls whose opening records committed while a flush was
// under way share the next one. The caller is answered only once both the
// tool and that flush are done, so the flush costs a call only what it
// takes beyond the tool; the result then commits with synchronous_commit off
// too.
//
// If the flush fails (the database went away), the call's result is written
// whole again, synchronously, with its Action, once the database is back
// (finishStarted), as before.

// flushStatement writes a record to PostgreSQL's log in its own transaction
// and so, with synchronous_commit on (the server's default), returns once
// the log up to it is on disk.
const flushStatement = "SELECT pg_logical_emit_message(true, 'subako.flush', '')"

// flushTimeout bounds one flush; a flush that does not answer in time
// counts as failed (the call's result is then written whole, durably).
const flushTimeout = 30 * time.Second

// pgFlusher batches the callers waiting for a flush: one flush at a time,
// and a caller is covered by the first flush that starts after it asked.
type pgFlusher struct {
	db      *models.DB
	mu      sync.Mutex
	running bool           // a goroutine is flushing (flushLoop)
	timer   bool           // a late flush is planned (piggyback)
	queued  []*flushTicket // waiting for the next flush to start
}

// flushTicket is one caller's wait for a flush.
type flushTicket struct {
	done chan struct{}
	err  error
	at   time.Time // when it was asked for (tickets left behind are pruned)
}

// wait waits for the flush that covers the ticket and says whether it failed.
func (t *flushTicket) wait() error {
	<-t.done
	return t.err
}

var (
	flushers sync.Map // *models.DB → *pgFlusher
	// openingFlushes holds each running call's ticket from its opening
	// record's commit to its finishing write: call id → *flushTicket.
	openingFlushes      sync.Map
	openingFlushesCount atomic.Int64
	lastPrune           atomic.Int64 // unix nanoseconds
)

func flusherFor(db *models.DB) *pgFlusher {
	if f, ok := flushers.Load(db); ok {
		return f.(*pgFlusher)
	}
	f, _ := flushers.LoadOrStore(db, &pgFlusher{db: db})
	return f.(*pgFlusher)
}

// request asks for a flush that starts after now; the returned ticket's
// wait returns once it is done.
func (f *pgFlusher) request() *flushTicket {
	t := &flushTicket{done: make(chan struct{}), at: time.Now()}
	f.mu.Lock()
	f.queued = append(f.queued, t)
	f.startLocked()
	f.mu.Unlock()
	return t
}

// piggyback is request for a caller that is not waiting: its ticket rides
// on the next flush a call asks for, or on one run after lateFlush if none
// does, so it adds no flush of its own to a busy database.
func (f *pgFlusher) piggyback() *flushTicket {
	t := &flushTicket{done: make(chan struct{}), at: time.Now()}
	f.mu.Lock()
	f.queued = append(f.queued, t)
	if !f.running && !f.timer {
		f.timer = true
		time.AfterFunc(lateFlush, func() {
			f.mu.Lock()
			f.timer = false
			f.startLocked()
			f.mu.Unlock()
		})
	}
	f.mu.Unlock()
	return t
}

// lateFlush is how long a piggybacked ticket waits for a call's flush
// before one is run for it.
const lateFlush = 100 * time.Millisecond

// startLocked starts flushLoop unless it runs (f.mu held).
func (f *pgFlusher) startLocked() {
	if f.running || len(f.queued) == 0 {
		return
	}
	f.running = true
	go f.flushLoop()
}

// flushLoop flushes for the callers queued, batch after batch, until none
// is left.
func (f *pgFlusher) flushLoop() {
	for {
		f.mu.Lock()
		batch := f.queued
		f.queued = nil
		if len(batch) == 0 {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		// Every ticket of the batch was asked for after its caller's commit
		// returned, and this flush starts after that: its log record comes
		// after those commits, and its flush covers them.
		err := f.flush()
		for _, t := range batch {
			t.err = err
			close(t.done)
		}
	}
}

// flush runs flushStatement on the pool itself, not through gorm: it is no
// call's statement (one flush covers every call that asked meanwhile), so
// the statement counts of TestCallStatementCount and
// TestMCPEndpointAddsNoStatementsToACall leave it out.
func (f *pgFlusher) flush() error {
	sqlDB, err := f.db.DB.DB()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	_, err = sqlDB.ExecContext(ctx, flushStatement)
	return err
}

// startOpeningFlush asks for the flush of a call's opening record, just
// committed without waiting for it (PostgreSQL only).
func (r *Runtime) startOpeningFlush(callID string) {
	t := flusherFor(r.db).request()
	openingFlushes.Store(callID, t)
	if openingFlushesCount.Add(1) > 10_000 {
		if last := lastPrune.Load(); time.Since(time.Unix(0, last)) > time.Minute && lastPrune.CompareAndSwap(last, time.Now().UnixNano()) {
			pruneOpeningFlushes()
		}
	}
}

// openingFlush takes the ticket of a call's opening flush; nil when the
// call's opening record was committed synchronously (or on SQLite).
func openingFlush(callID string) *flushTicket {
	t, ok := openingFlushes.LoadAndDelete(callID)
	if !ok {
		return nil
	}
	openingFlushesCount.Add(-1)
	return t.(*flushTicket)
}

// pruneOpeningFlushes forgets tickets nobody took within a minute (a call
// that ended without a finishing write of its own, such as one handed to a
// client), so the map stays bounded.
func pruneOpeningFlushes() {
	old := time.Now().Add(-time.Minute)
	openingFlushes.Range(func(k, v any) bool {
		if v.(*flushTicket).at.Before(old) {
			if _, ok := openingFlushes.LoadAndDelete(k); ok {
				openingFlushesCount.Add(-1)
			}
		}
		return true
	})
}

// writeFinishAsync is writeFinish committing without waiting for the log's
// flush (PostgreSQL, models.DB.NoFlushWait): for a call whose opening record
// is already durable. One statement, one round trip.
func (r *Runtime) writeFinishAsync(ctx context.Context, call models.ToolCall, from string, upd map[string]any) (*models.ToolCall, int64, error) {
	res := r.db.NoFlushWait().WithContext(ctx).Model(&models.ToolCall{}).Where("id = ? AND status = ?", call.ID, from).Updates(upd)
	if res.Error != nil {
		return nil, 0, res.Error
	}
	return finished(call, upd), res.RowsAffected, nil
}

// writeCallAndAction writes a call and its ToolCall.create Action on
// PostgreSQL in one statement (a data-modifying WITH: both rows or neither,
// one round trip where a transaction of the two inserts takes four),
// committed as db commits: an allowed call's opening record through
// models.DB.NoFlushWait (without waiting for the log's flush; the caller
// then asks for the flush, startOpeningFlush), a finished one (a skill's
// read, a refusal) synchronously. The two inserts are gorm's own (built by a
// dry run: the same columns and values as tx.Create writes).
func (r *Runtime) writeCallAndAction(ctx context.Context, db *gorm.DB, call *models.ToolCall, rec *models.Action) error {
	db = db.WithContext(ctx)
	dry := db.Session(&gorm.Session{DryRun: true})
	first := dry.Create(call)
	if first.Error != nil {
		return first.Error
	}
	second := dry.Create(rec)
	if second.Error != nil {
		return second.Error
	}
	sql1, vars1 := first.Statement.SQL.String(), first.Statement.Vars
	sql2, vars2 := second.Statement.SQL.String(), second.Statement.Vars
	if strings.Contains(sql1, "RETURNING") || strings.Contains(sql2, "RETURNING") {
		return fmt.Errorf("runtime: record call: unexpected RETURNING in %q / %q", sql1, sql2)
	}
	q := "WITH opened AS (" + sql1 + ") " + shiftPlaceholders(sql2, len(vars1))
	return db.Exec(q, append(append([]any{}, vars1...), vars2...)...).Error
}

// placeholder is a PostgreSQL bind parameter ($1, $2…).
var placeholder = regexp.MustCompile(`\$[0-9]+`)

// shiftPlaceholders renumbers q's $n as $(n+by).
func shiftPlaceholders(q string, by int) string {
	return placeholder.ReplaceAllStringFunc(q, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(n+by)
	})
}

// keepResult makes sure a call's result, committed without waiting for the
// log's flush after its caller was answered, is durable: if the flush that
// covers it fails (PostgreSQL went away, and may have lost it), the whole
// record (the call as finished, and its Action) is written again once the
// database answers, as finishStarted does, until the server stops.
func (r *Runtime) keepResult(final models.ToolCall, opened models.Action) {
	err := flusherFor(r.db).piggyback().wait()
	if err == nil {
		return
	}
	r.opts.Log.Warn("runtime: a call's result may be lost with the database; writing it again once the database answers", "call", final.ID, "err", err)
	ctx := context.Background()
	wait := finishRetryFirst
	for {
		select {
		case <-r.hot.closing:
			r.opts.Log.Error("runtime: server stopping before a call's result was known durable", "call", final.ID, "err", err)
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, finishRetryMax)
		if !r.databaseAnswers(ctx) {
			continue
		}
		if _, err = r.writeWholeCall(ctx, final, opened); err == nil {
			return
		}
	}
}
