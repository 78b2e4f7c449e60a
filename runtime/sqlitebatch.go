package runtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Group commit of the hot path's writes on SQLite (issue 11).
//
// SQLite has one writer, and the hot path's writes already queue for it on a
// mutex in the process (hotPath.writeMu). With several callers, each write
// was its own transaction: its own commit, its own pages appended to the
// log. Now the callers that queue while a write is under way hand their
// writes to the next one to write, which runs all of them in one
// transaction: one commit, the shared pages (the tables' and indexes' last
// leaves) written once. A lone caller writes at once, as before; a batch is
// whatever queued while the previous one committed, so no caller waits for
// a batch to fill.
//
// Every caller is answered only after its own writes committed. If any
// write of a batch fails, or its commit does, the batch is rolled back
// whole and each of its writes is run again alone, in its own transaction,
// so each caller gets its own outcome: the one whose write fails gets its
// error, the others are recorded, and nothing is half-written.

// sqliteBatch queues the hot path's writes on SQLite (hotPath.batch).
type sqliteBatch struct {
	mu      sync.Mutex
	leading bool            // a caller is writing, or about to (it takes queue)
	queue   []*sqliteWrite  // waiting for the next batch
	stats   sqliteBatchStat // for tests and benchmarks
}

type sqliteBatchStat struct {
	batches atomic.Int64 // transactions of more than one write
	grouped atomic.Int64 // writes in them
	largest atomic.Int64 // the most writes in one
	retried atomic.Int64 // batches rolled back and run again write by write
	queued  atomic.Int64 // callers waiting right now
}

// sqliteWrite is one caller's write.
type sqliteWrite struct {
	ctx context.Context
	// fn writes through tx. Run alone, it runs in a transaction of its own
	// when ownTx, else straight on the database (a single statement).
	fn    func(tx *gorm.DB) error
	ownTx bool
	lead  chan struct{} // closed: this caller writes the next batch
	done  chan struct{} // closed: err is this write's outcome
	err   error
	// panicked is what fn panicked with, run by whichever caller wrote the
	// batch: the batch is rolled back, the others are written without it,
	// and the panic is raised again in this write's own caller (hotWrite).
	panicked any
}

// errWritePanicked fails a batch one of whose writes panicked.
var errWritePanicked = errors.New("runtime: a hot-path write panicked")

// call runs fn, a panic of it turned into errWritePanicked (kept in
// w.panicked): it must not unwind through another caller's goroutine, with
// the writer's lock held and the batch's callers unanswered.
func (w *sqliteWrite) call(tx *gorm.DB) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.panicked, err = p, errWritePanicked
		}
	}()
	return w.fn(tx)
}

// outcome is what hotWrite returns to w's caller, or raises.
func (w *sqliteWrite) outcome() error {
	if w.panicked != nil {
		panic(w.panicked)
	}
	return w.err
}

// hotWrite runs a hot-path write: on SQLite through the group commit, on
// PostgreSQL as before (in a transaction of its own when ownTx).
func (r *Runtime) hotWrite(ctx context.Context, ownTx bool, fn func(tx *gorm.DB) error) error {
	if r.db.Dialect != models.SQLite {
		if ownTx {
			return r.db.WithContext(ctx).Transaction(fn)
		}
		return fn(r.db.WithContext(ctx))
	}
	b := &r.hot.batch
	w := &sqliteWrite{ctx: ctx, fn: fn, ownTx: ownTx, lead: make(chan struct{}), done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	if b.leading {
		b.stats.queued.Add(1)
		b.mu.Unlock()
		select {
		case <-w.done:
			b.stats.queued.Add(-1)
			return w.outcome()
		case <-w.lead:
			b.stats.queued.Add(-1)
		}
	} else {
		b.leading = true
		b.mu.Unlock()
	}
	// This caller writes the next batch: whatever queued until it holds the
	// writer's lock, its own write first.
	r.hot.writeMu.Lock()
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()
	r.runSQLiteBatch(batch)
	r.hot.writeMu.Unlock()
	// Hand over to the first caller that queued meanwhile, if any.
	b.mu.Lock()
	if len(b.queue) > 0 {
		close(b.queue[0].lead)
	} else {
		b.leading = false
	}
	b.mu.Unlock()
	return w.outcome()
}

// runSQLiteBatch runs the writes, one transaction for all of them, and
// answers each (but the caller running it, which reads its own err).
func (r *Runtime) runSQLiteBatch(batch []*sqliteWrite) {
	defer func() {
		for _, w := range batch {
			select {
			case <-w.lead:
			default:
				close(w.done)
			}
		}
	}()
	live := batch[:0:0]
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = err // its caller gave up before it was written
			continue
		}
		live = append(live, w)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].err = live[0].runAlone(r.db)
		return
	}
	st := &r.hot.batch.stats
	st.batches.Add(1)
	st.grouped.Add(int64(len(live)))
	for n := int64(len(live)); ; {
		old := st.largest.Load()
		if n <= old || st.largest.CompareAndSwap(old, n) {
			break
		}
	}
	// The batch's statements run in the first caller's context, without its
	// cancellation: another caller's write must not fail with it.
	err := r.db.WithContext(context.WithoutCancel(live[0].ctx)).Transaction(func(tx *gorm.DB) error {
		for _, w := range live {
			if err := w.call(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	// Rolled back whole: each write again alone, with its own outcome.
	st.retried.Add(1)
	for _, w := range live {
		if w.panicked != nil {
			w.err = errWritePanicked // not run again: its caller gets its panic
			continue
		}
		w.err = w.runAlone(r.db)
	}
}

func (w *sqliteWrite) runAlone(db *models.DB) error {
	if w.ownTx {
		return db.WithContext(w.ctx).Transaction(w.call)
	}
	return w.call(db.WithContext(w.ctx))
}
