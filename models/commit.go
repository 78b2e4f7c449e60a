package models

import (
	"context"
	"database/sql"
	"strings"
	"sync"
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
	if s := p.stmts.outside(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return p.DB.ExecContext(ctx, query, args...)
}

func (p commitPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := p.stmts.outside(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return p.DB.QueryContext(ctx, query, args...)
}

func (p commitPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := p.stmts.outside(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
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
	if s := t.stmts.inside(ctx, query); s != nil {
		return t.Tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *commitTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmts.inside(ctx, query); s != nil {
		return t.Tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *commitTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmts.inside(ctx, query); s != nil {
		return t.Tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
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
type stmtCache struct {
	db    *sql.DB
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
}

// stmtCacheMax bounds the statements kept: queries built with lists of
// varying length each make their own. Beyond it, new texts run unprepared.
const stmtCacheMax = 512

// poolPrepareWait bounds a transaction's wait for a connection to prepare a
// new statement on, for the moment between seeing one free and taking it,
// when another may take it first. (A connection the pool opens for it is
// opened whole: that takes no lock another connection holds, in WAL mode.)
const poolPrepareWait = 20 * time.Millisecond

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}}
}

// get is the statement kept for query, and whether to run query without
// preparing one now (kept, the cache full, or a text not worth keeping).
func (c *stmtCache) get(query string) (*sql.Stmt, bool) {
	if !cacheable(query) {
		return nil, true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.stmts[query]
	return s, s != nil || len(c.stmts) >= stmtCacheMax
}

// outside is the statement for query run outside a transaction, prepared
// now if it is new; nil runs the text unprepared (the cache is full, or the
// preparation failed: run as is, the query reports its own error).
func (c *stmtCache) outside(ctx context.Context, query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	if s, known := c.get(query); known {
		return s
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	return c.keep(query, s)
}

// inside is the statement for query run in a transaction: a new one is
// prepared on the pool only when a connection is free for it, since
// waiting for one could wait for this very transaction; nil runs the text
// unprepared on the transaction.
func (c *stmtCache) inside(ctx context.Context, query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	if s, known := c.get(query); known {
		return s
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

// keep caches s for query and returns the statement to run: the one
// another caller kept first, or nil when the cache is full (the text runs
// unprepared). s, when not kept, is closed in the background: closing
// takes the lock of every connection it was prepared on, which a writer
// waiting for SQLite's write lock may hold for the busy timeout, and the
// caller may be the transaction holding that lock.
func (c *stmtCache) keep(query string, s *sql.Stmt) *sql.Stmt {
	c.mu.Lock()
	kept := c.stmts[query]
	if kept == nil && len(c.stmts) < stmtCacheMax {
		c.stmts[query] = s
		kept = s
	}
	c.mu.Unlock()
	if kept != s {
		go s.Close()
	}
	return kept
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

// close closes every kept statement, with the pool.
func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	stmts := c.stmts
	c.stmts = map[string]*sql.Stmt{}
	c.mu.Unlock()
	for _, s := range stmts {
		_ = s.Close()
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
