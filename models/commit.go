package models

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"gorm.io/gorm"
)

// commitPool is the connection pool under the prepared-statement cache. Its
// transactions run what was registered during them (AfterCommit) once they
// have committed: a cache emptied by a write inside a transaction must be
// emptied again after the commit, or a read that ran between the write and
// the commit (still seeing the old rows) could fill it with what the
// transaction was replacing.
type commitPool struct {
	*sql.DB
	// stmts, when set, has the transactions' statements prepared on the
	// pool rather than on the transaction (poolStatements).
	stmts *poolStatements
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

type commitTx struct {
	*sql.Tx
	stmts *poolStatements
	mu    sync.Mutex
	after map[string]func()
	// prepared are the statements gorm's cache had prepared through t
	// (PrepareContext), settled in the cache when t ends.
	prepared []preparedStmt
}

// preparedStmt is one statement prepared through a transaction.
type preparedStmt struct {
	query string
	stmt  *sql.Stmt
	onTx  bool // prepared on the transaction alone (no connection was free)
}

func (t *commitTx) Commit() error {
	err := t.Tx.Commit()
	t.mu.Lock()
	after := t.after
	t.after = nil
	t.mu.Unlock()
	t.settle()
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
	err := t.Tx.Rollback()
	t.settle()
	return err
}

// PrepareContext is what gorm's statement cache calls for a statement it
// first meets inside a transaction (poolStatements). gorm runs what it
// returns only through Tx.StmtContext, on the transaction's connection.
func (t *commitTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if t.stmts == nil {
		return t.Tx.PrepareContext(ctx, query)
	}
	s, ok := t.stmts.onPool(ctx, query)
	if !ok {
		var err error
		if s, err = t.Tx.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	t.prepared = append(t.prepared, preparedStmt{query: query, stmt: s, onTx: !ok})
	t.mu.Unlock()
	return s, nil
}

// settle tells gorm's cache about the statements prepared through t, now
// that t has ended (poolStatements.settle).
func (t *commitTx) settle() {
	t.mu.Lock()
	prepared := t.prepared
	t.prepared = nil
	t.mu.Unlock()
	if len(prepared) > 0 {
		t.stmts.settle(prepared)
	}
}

// poolStatements makes gorm's statement cache keep what a transaction
// prepares (SQLite).
//
// gorm's cache (PrepareStmt) prepares a statement it first meets inside a
// transaction on that transaction, and database/sql closes such a
// statement when the transaction ends. The cache keeps the closed
// statement, so every later transaction compiled the same text again (on
// modernc.org/sqlite, a parse and a finalize per statement: a sixth of a
// call record's CPU). A statement prepared on the pool instead belongs to
// no transaction: database/sql prepares it on each connection a
// transaction runs it on (the first time, on the pool's connection too)
// and keeps it there as long as the cache keeps the statement.
//
// gorm marks a statement first met in a transaction as for transactions
// only, and a statement outside any would prepare the same text again and
// put it in its place without closing the first. Once the transaction has
// ended, a statement prepared on the pool is marked for any use.
//
// Preparing on the pool needs a connection other than the transaction's.
// When the pool has none free (every connection in a transaction, perhaps
// waiting for this one's lock), waiting could deadlock, so the statement is
// prepared on the transaction as before, and dropped from the cache when
// the transaction ends so that a later one prepares it on the pool.
type poolStatements struct {
	db *sql.DB
	// cache is gorm's, set once the prepared session exists.
	cache *gorm.PreparedStmtDB
}

// poolPrepareWait bounds the wait for a connection to prepare on, for the
// moment between seeing one free and taking it, when another may take it
// first. (A connection the pool opens for it is opened whole: that takes
// no lock another connection holds, in WAL mode.)
const poolPrepareWait = 20 * time.Millisecond

// onPool prepares query on the pool when a connection is free for it.
func (p *poolStatements) onPool(ctx context.Context, query string) (*sql.Stmt, bool) {
	st := p.db.Stats()
	if st.Idle == 0 && st.MaxOpenConnections > 0 && st.OpenConnections >= st.MaxOpenConnections {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, poolPrepareWait)
	defer cancel()
	s, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, false
	}
	return s, true
}

// settle marks the statements of an ended transaction that gorm's cache
// still holds: one prepared on the pool for any use, one prepared on the
// transaction (closed with it) dropped, so the next use prepares it again.
// A statement prepared on the pool that the cache no longer holds (a
// statement outside any transaction took its place meanwhile, without
// closing it) is closed; database/sql finalizes it once the transactions
// still running it are done. Under the cache's lock, the one its own
// preparations take to add a statement: what is compared is what gets
// changed.
func (p *poolStatements) settle(prepared []preparedStmt) {
	if p.cache == nil {
		return
	}
	p.cache.Mux.Lock()
	defer p.cache.Mux.Unlock()
	for _, ps := range prepared {
		cached, ok := p.cache.Stmts.Get(ps.query)
		held := ok && cached.Stmt == ps.stmt
		switch {
		case held && ps.onTx:
			p.cache.Stmts.Delete(ps.query)
		case held:
			cached.Transaction = false
		case !ps.onTx:
			_ = ps.stmt.Close()
		}
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
	var t *commitTx
	switch pool := db.Statement.ConnPool.(type) {
	case *gorm.PreparedStmtTX:
		t, _ = pool.Tx.(*commitTx)
	case *commitTx:
		t = pool
	}
	if t == nil {
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
