package models

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// openSQLiteForTest opens and migrates a SQLite database in a fresh folder.
func openSQLiteForTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(); err != nil {
		t.Fatal(err)
	}
	return db
}

const agentCountQuery = "SELECT count(*) FROM agents WHERE name = ?"

// countInTx runs agentCountQuery through gorm's statement cache inside a
// transaction, as the hot path's writes run.
func countInTx(t *testing.T, db *DB) {
	t.Helper()
	err := db.Transaction(func(tx *gorm.DB) error {
		var n int64
		return tx.Raw(agentCountQuery, "none").Scan(&n).Error
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cachedStatement is what gorm's cache holds for query, run outside any
// transaction: an error when the cache holds a statement database/sql
// closed (one every later transaction must prepare again).
func cachedStatement(t *testing.T, db *DB, query string) (stmt *sql.Stmt, err error) {
	t.Helper()
	cache, ok := db.Statement.ConnPool.(*gorm.PreparedStmtDB)
	if !ok {
		t.Fatalf("the SQLite handle has no statement cache: %T", db.Statement.ConnPool)
	}
	st, ok := cache.Stmts.Get(query)
	if !ok {
		return nil, nil
	}
	var n int64
	return st.Stmt, st.Stmt.QueryRow("none").Scan(&n)
}

// keptStatement is the statement gorm's cache holds for agentCountQuery,
// which must be there and still run; when names the moment, for the error.
func keptStatement(t *testing.T, db *DB, when string) *sql.Stmt {
	t.Helper()
	st, err := cachedStatement(t, db, agentCountQuery)
	if st == nil {
		t.Fatalf("%s, the statement is not in gorm's cache", when)
	}
	if err != nil {
		t.Fatalf("%s, the cached statement no longer runs: %v", when, err)
	}
	return st
}

// idleConnections leaves n connections open and idle in db's pool, so a
// transaction finds one free to prepare on without opening one.
func idleConnections(t *testing.T, db *DB, n int) {
	t.Helper()
	sqlDB, err := db.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	var conns []*sql.Conn
	for range n {
		c, err := sqlDB.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
}

// A statement gorm first meets inside a transaction stays prepared for the
// next transactions (issue 11): before, it was prepared on the transaction,
// closed at its commit and kept closed in the cache, so every later
// transaction compiled its SQL again.
func TestStatementFirstMetInATransactionStaysPrepared(t *testing.T) {
	db := openSQLiteForTest(t)
	idleConnections(t, db, 2)
	countInTx(t, db)
	first := keptStatement(t, db, "after its first transaction")
	countInTx(t, db)
	if again := keptStatement(t, db, "after a second transaction"); again != first {
		t.Fatal("a second transaction prepared the statement again")
	}
	// The same text outside a transaction takes the same statement: gorm
	// would otherwise prepare another and put it in the first's place
	// without closing the first.
	var n int64
	if err := db.Raw(agentCountQuery, "none").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if outside, _ := cachedStatement(t, db, agentCountQuery); outside != first {
		t.Fatal("the statement outside a transaction was prepared again, and the first left open")
	}
}

// With every other connection of the pool taken, a transaction's new
// statement is prepared on the transaction at once (waiting for a free
// connection could wait for this very transaction) and dropped from the
// cache when the transaction ends; the next transaction, with connections
// free again, prepares it on the pool and keeps it.
func TestStatementPreparedWithThePoolFull(t *testing.T) {
	db := openSQLiteForTest(t)
	sqlDB, err := db.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var held []*sql.Conn
	for st := sqlDB.Stats(); st.OpenConnections-st.Idle < st.MaxOpenConnections-1; st = sqlDB.Stats() {
		c, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	done := make(chan error, 1)
	go func() {
		done <- db.Transaction(func(tx *gorm.DB) error {
			var n int64
			return tx.Raw(agentCountQuery, "none").Scan(&n).Error
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a transaction with the pool full waited for a free connection to prepare a statement on")
	}
	if st, _ := cachedStatement(t, db, agentCountQuery); st != nil {
		t.Fatal("the statement prepared on the transaction alone is still in the cache after it ended")
	}
	for _, c := range held {
		c.Close()
	}
	countInTx(t, db)
	keptStatement(t, db, "with connections free again")
}

// A statement prepared on the pool inside a transaction that the same text
// outside any transaction replaced in gorm's cache meanwhile (gorm keeps
// one marked for transactions only from statements outside them, and puts
// the new one in its place without closing the first) is closed when the
// transaction ends, not left open on every connection.
func TestStatementReplacedDuringItsTransactionIsClosed(t *testing.T) {
	db := openSQLiteForTest(t)
	idleConnections(t, db, 3)
	cache := db.Statement.ConnPool.(*gorm.PreparedStmtDB)
	var first *sql.Stmt
	err := db.Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Raw(agentCountQuery, "none").Scan(&n).Error; err != nil {
			return err
		}
		st, ok := cache.Stmts.Get(agentCountQuery)
		if !ok {
			t.Error("the statement run in the transaction is not in gorm's cache")
			return nil
		}
		first = st.Stmt
		return db.Raw(agentCountQuery, "none").Scan(&n).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.FailNow()
	}
	if kept := keptStatement(t, db, "after the transaction"); kept == first {
		t.Fatal("the statement outside the transaction did not replace the transaction's: the test sets nothing up")
	}
	var n int64
	if err := first.QueryRow("none").Scan(&n); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("the replaced statement still runs after its transaction (err %v): left open", err)
	}
}
