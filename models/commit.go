package models

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// commitPool is the connection pool under gorm. Its transactions run what
// was registered during them (AfterCommit) once they have committed: a
// cache emptied by a write inside a transaction must be emptied again after
// the commit, or a read that ran between the write and the commit (still
// seeing the old rows) could fill it with what the transaction was
// replacing. On SQLite its statements, and its transactions', run prepared
// (stmts).
type commitPool struct {
	*sql.DB
	stmts *stmtCache // nil: statements run as the driver runs them (PostgreSQL)
}

// GetDBConn lets gorm's DB() find the *sql.DB under the wrapper.
func (p commitPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// BeginTx shadows *sql.DB's, so gorm takes the ConnPoolBeginner path.
func (p commitPool) BeginTx(ctx context.Context, opt *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.DB.BeginTx(ctx, opt)
	if err != nil {
		return nil, err
	}
	return &commitTx{Tx: tx, stmts: p.stmts}, nil
}

func (p commitPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if e := p.stmts.outside(ctx, query); e != nil {
		defer e.unpin()
		return e.stmt.ExecContext(ctx, args...)
	}
	return p.DB.ExecContext(ctx, query, args...)
}

func (p commitPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if e := p.stmts.outside(ctx, query); e != nil {
		defer e.unpin()
		return e.stmt.QueryContext(ctx, args...)
	}
	return p.DB.QueryContext(ctx, query, args...)
}

func (p commitPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if e := p.stmts.outside(ctx, query); e != nil {
		defer e.unpin()
		return e.stmt.QueryRowContext(ctx, args...)
	}
	return p.DB.QueryRowContext(ctx, query, args...)
}

type commitTx struct {
	*sql.Tx
	stmts *stmtCache
	mu    sync.Mutex
	after map[string]func()
}

func (t *commitTx) Commit() error {
	err := t.Tx.Commit()
	t.mu.Lock()
	after := t.after
	t.after = nil
	t.mu.Unlock()
	if err == nil {
		for _, f := range after {
			f()
		}
	}
	return err
}

func (t *commitTx) Rollback() error {
	t.mu.Lock()
	t.after = nil
	t.mu.Unlock()
	return t.Tx.Rollback()
}

func (t *commitTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if e := t.stmts.inside(ctx, query); e != nil {
		defer e.unpin()
		return t.Tx.StmtContext(ctx, e.stmt).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *commitTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if e := t.stmts.inside(ctx, query); e != nil {
		defer e.unpin()
		return t.Tx.StmtContext(ctx, e.stmt).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *commitTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if e := t.stmts.inside(ctx, query); e != nil {
		defer e.unpin()
		return t.Tx.StmtContext(ctx, e.stmt).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// stmtCache keeps SQLite's statements prepared: one *sql.Stmt per text,
// which database/sql prepares on each connection the first time it runs
// there and keeps, for the pool and its transactions alike (through
// Tx.StmtContext). On modernc.org/sqlite a statement run unprepared is
// parsed and finalized each time: a fifth of a write's CPU.
//
// It replaces gorm's cache (PrepareStmt), under which the transaction
// holding SQLite's write lock could wait on other goroutines. gorm cached a
// statement first met outside a transaction before preparing it, and
// prepared it once a connection was free; whoever met the same text
// meanwhile waited for it, the transaction holding the lock among them, and
// the pool's other connections could all be writers waiting for that very
// lock. Nothing moved until one of them gave up at the busy timeout (10 s)
// with SQLITE_BUSY, failing its verb with a 500 (the soak test, once in CI).
//
// Here nobody waits for another's preparation: a statement is cached once
// prepared; outside a transaction a caller with a new text prepares it
// itself, holding no connection while it waits for one; inside one, a new
// text is prepared on the pool only if a connection is free at once, and
// otherwise runs unprepared on the transaction.
//
// The cache holds at most stmtCacheMax texts. A new text when it is full
// takes the place of the one run least recently, so texts met late in a
// server's life (a feature first used after weeks) are prepared as the
// first ones were, and lists of every length (IN clauses) come and go.
type stmtCache struct {
	db    *sql.DB
	mu    sync.RWMutex
	stmts map[string]*cachedStmt
	clock atomic.Uint64 // counts the statements found or kept: their order
}

// cachedStmt is one kept statement. A caller pins it from the moment it is
// found until its statement has started (database/sql itself then holds
// the statement open for the rows or the transaction's statement using
// it), so an eviction meanwhile never closes it under that caller: the
// last to let go of an evicted statement closes it.
type cachedStmt struct {
	stmt    *sql.Stmt
	last    atomic.Uint64 // the cache's clock when last found or kept
	pins    atomic.Int32  // callers between finding it and starting it
	evicted atomic.Bool   // out of the cache: closed once no one pins it
	closing sync.Once
}

// unpin lets go of e once its statement has started; nil-safe.
func (e *cachedStmt) unpin() {
	if e != nil && e.pins.Add(-1) == 0 && e.evicted.Load() {
		e.closeSoon()
	}
}

// closeSoon closes e's statement in the background, once: closing takes
// the lock of every connection it was prepared on, which a writer waiting
// for SQLite's write lock may hold for the busy timeout, and the caller
// may be the transaction holding that lock.
func (e *cachedStmt) closeSoon() {
	e.closing.Do(func() { go e.stmt.Close() })
}

// stmtCacheMax bounds the statements kept: queries built with lists of
// varying length each make their own.
const stmtCacheMax = 512

// poolPrepareWait bounds a transaction's wait for a connection to prepare a
// new statement on, for the moment between seeing one free and taking it,
// when another may take it first. (A connection the pool opens for it is
// opened whole: that takes no lock another connection holds, in WAL mode.)
const poolPrepareWait = 20 * time.Millisecond

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*cachedStmt{}}
}

// get is the statement kept for query, pinned, and whether to run query
// without preparing one now (kept, or a text not worth keeping).
func (c *stmtCache) get(query string) (*cachedStmt, bool) {
	if !cacheable(query) {
		return nil, true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.stmts[query]
	if e == nil {
		return nil, false
	}
	e.pins.Add(1)
	e.last.Store(c.clock.Add(1))
	return e, true
}

// outside is the statement for query run outside a transaction, prepared
// now if it is new, and pinned (unpin it once started); nil runs the text
// unprepared (the preparation failed: run as is, the query reports its own
// error).
func (c *stmtCache) outside(ctx context.Context, query string) *cachedStmt {
	if c == nil {
		return nil
	}
	if e, known := c.get(query); known {
		return e
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	return c.keep(query, s)
}

// inside is the statement for query run in a transaction, pinned: a new
// one is prepared on the pool only when a connection is free for it,
// since waiting for one could wait for this very transaction; nil runs the
// text unprepared on the transaction.
func (c *stmtCache) inside(ctx context.Context, query string) *cachedStmt {
	if c == nil {
		return nil
	}
	if e, known := c.get(query); known {
		return e
	}
	st := c.db.Stats()
	if st.Idle == 0 && st.MaxOpenConnections > 0 && st.OpenConnections >= st.MaxOpenConnections {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, poolPrepareWait)
	defer cancel()
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	return c.keep(query, s)
}

// keep caches s for query, evicting another text if the cache is full,
// and returns the statement to run, pinned: s, or the one another caller
// kept first, in which case s is closed (in the background, see
// closeSoon).
func (c *stmtCache) keep(query string, s *sql.Stmt) *cachedStmt {
	c.mu.Lock()
	e := c.stmts[query]
	if e == nil {
		if len(c.stmts) >= stmtCacheMax {
			c.evictLocked()
		}
		e = &cachedStmt{stmt: s}
		c.stmts[query] = e
	}
	e.pins.Add(1)
	e.last.Store(c.clock.Add(1))
	c.mu.Unlock()
	if e.stmt != s {
		go s.Close()
	}
	return e
}

// evictLocked drops the text run least recently that no caller pins (of
// all, if every one is pinned: a burst of new texts). Under c.mu, written;
// a scan of at most stmtCacheMax, only when a new text was prepared.
func (c *stmtCache) evictLocked() {
	var victim string
	var oldest uint64
	pinned := true
	for q, e := range c.stmts {
		free := e.pins.Load() == 0
		if last := e.last.Load(); victim == "" || (free && pinned) || (free == !pinned && last < oldest) {
			victim, oldest, pinned = q, last, !free
		}
	}
	e := c.stmts[victim]
	delete(c.stmts, victim)
	e.evicted.Store(true)
	if e.pins.Load() == 0 {
		e.closeSoon()
	}
}

// cacheable says whether query is worth a place in the cache: what the
// server asks again and again (SELECT, INSERT, UPDATE, DELETE, WITH), not
// a savepoint's unique name nor a one-off statement of a schema.
func cacheable(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	if len(q) < 6 {
		return false
	}
	switch strings.ToUpper(q[:6]) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "REPLAC":
		return true
	}
	return strings.EqualFold(q[:5], "WITH ")
}

// close closes every kept statement, pinned or not, as the pool closes: a
// query starting meanwhile fails, as it would on the closed pool.
func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	stmts := c.stmts
	c.stmts = map[string]*cachedStmt{}
	c.mu.Unlock()
	for _, e := range stmts {
		_ = e.stmt.Close()
	}
}

// AfterCommit registers f to run once the transaction db's statement runs in
// has committed (once per key and transaction; not at all if it rolls back)
// and reports true. It reports false, registering nothing, when the
// statement runs in no transaction.
func AfterCommit(db *gorm.DB, key string, f func()) bool {
	if db == nil || db.Statement == nil {
		return false
	}
	t, ok := db.Statement.ConnPool.(*commitTx)
	if !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.after == nil {
		t.after = map[string]func(){}
	}
	t.after[key] = f
	return true
}
