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
	// own are the statements prepared on this transaction alone, dropped
	// from gorm's cache when it ends (poolStatements.prepare).
	own map[string]*sql.Stmt
}

func (t *commitTx) Commit() error {
	err := t.Tx.Commit()
	t.mu.Lock()
	after := t.after
	t.after = nil
	t.mu.Unlock()
	t.forgetOwn()
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
	t.forgetOwn()
	return err
}

// PrepareContext is what gorm's statement cache calls for a statement it
// first meets inside a transaction (poolStatements).
func (t *commitTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if t.stmts == nil {
		return t.Tx.PrepareContext(ctx, query)
	}
	if s, ok := t.stmts.onPool(ctx, query); ok {
		return s, nil
	}
	s, err := t.Tx.PrepareContext(ctx, query)
	if err == nil {
		t.mu.Lock()
		if t.own == nil {
			t.own = map[string]*sql.Stmt{}
		}
		t.own[query] = s
		t.mu.Unlock()
	}
	return s, err
}

// forgetOwn drops from gorm's cache the statements prepared on t alone:
// database/sql closed them with t, and a closed statement left there would
// be prepared again in every later transaction.
func (t *commitTx) forgetOwn() {
	t.mu.Lock()
	own := t.own
	t.own = nil
	t.mu.Unlock()
	for query, s := range own {
		t.stmts.forget(query, s)
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
// no transaction: database/sql prepares it once on each connection a
// transaction runs it on and keeps it there.
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
// first.
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

// forget drops query from gorm's cache if it still holds s there.
func (p *poolStatements) forget(query string, s *sql.Stmt) {
	if p.cache == nil {
		return
	}
	// Without the cache's lock: a statement another transaction put there
	// in between is at worst dropped too, and prepared once more.
	if cached, ok := p.cache.Stmts.Get(query); ok && cached.Stmt == s {
		p.cache.Stmts.Delete(query)
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
