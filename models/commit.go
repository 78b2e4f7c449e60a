package models

import (
	"context"
	"database/sql"
	"sync"

	"gorm.io/gorm"
)

// commitPool is the connection pool under the prepared-statement cache. Its
// transactions run what was registered during them (AfterCommit) once they
// have committed: a cache emptied by a write inside a transaction must be
// emptied again after the commit, or a read that ran between the write and
// the commit (still seeing the old rows) could fill it with what the
// transaction was replacing.
type commitPool struct{ *sql.DB }

// GetDBConn lets gorm's DB() find the *sql.DB under the wrapper.
func (p commitPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// BeginTx shadows *sql.DB's, so gorm takes the ConnPoolBeginner path.
func (p commitPool) BeginTx(ctx context.Context, opt *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.DB.BeginTx(ctx, opt)
	if err != nil {
		return nil, err
	}
	return &commitTx{Tx: tx}, nil
}

type commitTx struct {
	*sql.Tx
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
