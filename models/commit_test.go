package models

import (
	"context"
	"database/sql"
	"fmt"
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

// cachedStatement is the statement the cache holds for query, run outside
// any transaction (an error when it no longer runs).
func cachedStatement(t *testing.T, db *DB, query string) (stmt *sql.Stmt, err error) {
	t.Helper()
	if db.stmts == nil {
		t.Fatal("the SQLite handle has no statement cache")
	}
	db.stmts.mu.RLock()
	e := db.stmts.stmts[query]
	db.stmts.mu.RUnlock()
	if e == nil {
		return nil, nil
	}
	st := e.stmt
	var n int64
	return st, st.QueryRow("none").Scan(&n)
}

// keptStatement is the statement the cache holds for agentCountQuery,
// which must be there and still run; when names the moment, for the error.
func keptStatement(t *testing.T, db *DB, when string) *sql.Stmt {
	t.Helper()
	st, err := cachedStatement(t, db, agentCountQuery)
	if st == nil {
		t.Fatalf("%s, the statement is not in the cache", when)
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

// A statement first met inside a transaction stays prepared for the next
// transactions and for the same text outside any (issue 11): compiled
// once, not at every call.
func TestStatementFirstMetInATransactionStaysPrepared(t *testing.T) {
	db := openSQLiteForTest(t)
	idleConnections(t, db, 2)
	countInTx(t, db)
	first := keptStatement(t, db, "after its first transaction")
	countInTx(t, db)
	if again := keptStatement(t, db, "after a second transaction"); again != first {
		t.Fatal("a second transaction prepared the statement again")
	}
	var n int64
	if err := db.Raw(agentCountQuery, "none").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if outside, _ := cachedStatement(t, db, agentCountQuery); outside != first {
		t.Fatal("the statement outside a transaction was prepared again")
	}
}

// With every other connection of the pool taken, a transaction's new
// statement runs at once, unprepared (waiting for a free connection could
// wait for this very transaction), and is not cached; the next
// transaction, with connections free again, prepares it on the pool and
// keeps it.
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
		t.Fatal("the statement run with the pool full was cached")
	}
	for _, c := range held {
		c.Close()
	}
	countInTx(t, db)
	keptStatement(t, db, "with connections free again")
}

// The cache keeps at most stmtCacheMax statements. Past that, a new text
// takes the place of the one run least recently, never of one run all
// along: a text met late in a server's life is prepared like the first
// ones, and a hot one stays prepared however many lists of new lengths
// come and go.
func TestStatementCacheIsBoundedAndKeepsWhatIsUsed(t *testing.T) {
	db := openSQLiteForTest(t)
	run := func(q string, want int64) {
		t.Helper()
		var n int64
		if err := db.Raw(q, "none").Scan(&n).Error; err != nil || n != want {
			t.Fatalf("%s: %d, %v; want %d", q, n, err, want)
		}
	}
	const hot = "SELECT count(*) FROM agents WHERE name = ? /* hot */"
	run(hot, 0)
	first, _ := cachedStatement(t, db, hot)
	for i := range 3 * stmtCacheMax {
		run(fmt.Sprintf("SELECT count(*) + %d FROM agents WHERE name = ?", i), int64(i))
		run(hot, 0)
	}
	if n := len(db.stmts.stmts); n != stmtCacheMax {
		t.Fatalf("the cache holds %d statements; want %d", n, stmtCacheMax)
	}
	if st, err := cachedStatement(t, db, hot); st != first || err != nil {
		t.Errorf("the text run after every other one was evicted (kept %p, now %p, %v)", first, st, err)
	}
	last := fmt.Sprintf("SELECT count(*) + %d FROM agents WHERE name = ?", 3*stmtCacheMax-1)
	if st, err := cachedStatement(t, db, last); st == nil || err != nil {
		t.Errorf("the newest text is not prepared and kept (%v): texts met late run unprepared", err)
	}
}

// A statement is never closed under a caller that found it in the cache:
// evicted while pinned, it still runs, and it is closed once let go.
func TestAnEvictedStatementClosesOnlyOnceLetGo(t *testing.T) {
	db := openSQLiteForTest(t)
	c := db.stmts
	const q = "SELECT count(*) FROM agents WHERE name = ? /* evicted */"
	e := c.outside(context.Background(), q) // pinned, as a caller holds it
	c.mu.Lock()
	for other, o := range c.stmts { // leave q the only text, so it is the one evicted
		if other != q {
			delete(c.stmts, other)
			o.closeSoon()
		}
	}
	c.evictLocked()
	c.mu.Unlock()
	if _, kept := c.stmts[q]; kept {
		t.Fatal("the statement was not evicted")
	}
	time.Sleep(100 * time.Millisecond) // time for a close in the background
	var n int64
	if err := e.stmt.QueryRow("none").Scan(&n); err != nil {
		t.Fatalf("the pinned statement, evicted, no longer runs: %v", err)
	}
	e.unpin()
	waitUntil(t, "the evicted statement to close once let go", func() bool {
		return e.stmt.QueryRow("none").Scan(&n) != nil
	})
}

// Many goroutines running more texts than the cache holds, in and out of
// transactions, all get their answers: an eviction never closes a
// statement another is about to run.
func TestEvictionsUnderLoadNeverFailAQuery(t *testing.T) {
	db := openSQLiteForTest(t)
	const workers, each, texts = 8, 400, 2 * stmtCacheMax
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				k := (w*7919 + i*104729) % texts
				q := fmt.Sprintf("SELECT count(*) + %d FROM agents WHERE name = ?", k)
				var n int64
				var err error
				if i%3 == 0 {
					err = db.Transaction(func(tx *gorm.DB) error { return tx.Raw(q, "none").Scan(&n).Error })
				} else {
					err = db.Raw(q, "none").Scan(&n).Error
				}
				if err == nil && n != int64(k) {
					err = fmt.Errorf("%s answered %d", q, n)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(db.stmts.stmts); n > stmtCacheMax {
		t.Fatalf("the cache holds %d statements; at most %d", n, stmtCacheMax)
	}
}

// The transaction holding SQLite's write lock never waits on another
// goroutine's statement. Under gorm's cache it did: a statement first met
// outside a transaction was cached before it was prepared, and prepared
// once a connection was free; the transaction meeting the same text waited
// for it, as did every goroutine behind the cache's lock, while the pool's
// other connections were writers waiting in BEGIN IMMEDIATE for that very
// lock. Nothing moved until a writer gave up at the busy timeout (10 s)
// with SQLITE_BUSY: Session.end's 500 in a CI soak.
func TestTransactionNeverWaitsForAStatementPreparedOutsideIt(t *testing.T) {
	for _, c := range []struct {
		name         string
		outside      bool // a read outside any transaction waits for a connection
		sameAsOthers bool // the transaction runs the text that read is preparing
	}{
		{"without a read outside a transaction", false, false},
		{"the transaction running the text a read outside prepares", true, true},
		{"the transaction running another text", true, false},
	} {
		t.Run(c.name, func(t *testing.T) { transactionAmongWaiters(t, c.outside, c.sameAsOthers) })
	}
}

func transactionAmongWaiters(t *testing.T, outsideRead, same bool) {
	db := openSQLiteForTest(t)
	sqlDB, err := db.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	const fresh = "SELECT count(*) FROM agents WHERE name = ? /* first met while the pool is full */"
	const known = "SELECT count(*) FROM agents WHERE id = ? /* met long before */"
	ctx := context.Background()
	var n int64
	if err := db.Raw(known, "w").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	tQuery := known
	if same {
		tQuery = fresh
	}

	// T: a transaction (BEGIN IMMEDIATE: it holds the write lock).
	holding, next := make(chan struct{}), make(chan struct{})
	tDone := make(chan error, 1)
	go func() {
		tDone <- db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			close(holding)
			<-next
			var n int64
			return tx.Raw(tQuery, "x").Scan(&n).Error
		})
	}()
	<-holding

	// Writers take the pool's other connections and wait in BEGIN IMMEDIATE
	// for T's lock, sleeping in SQLite's busy handler.
	type outcome struct {
		err  error
		took time.Duration
	}
	writers := make(chan outcome, 3)
	for range 3 {
		go func() {
			start := time.Now()
			err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return nil })
			writers <- outcome{err, time.Since(start)}
		}()
	}
	waitUntil(t, "the pool's 4 connections in use", func() bool { return sqlDB.Stats().InUse == 4 })

	if outsideRead {
		// Reads outside any transaction meet new texts and wait for a
		// connection to run (and prepare) them on.
		waits := sqlDB.Stats().WaitCount
		for _, q := range []string{fresh, fresh, "SELECT count(*) FROM agents WHERE description = ? /* another */"} {
			go func() {
				var n int64
				_ = db.WithContext(ctx).Raw(q, "y").Scan(&n).Error
			}()
		}
		waitUntil(t, "the reads to wait for a connection", func() bool { return sqlDB.Stats().WaitCount >= waits+3 })
	}

	start := time.Now()
	close(next)
	select {
	case err := <-tDone:
		if err != nil {
			t.Fatalf("the transaction: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the transaction is still waiting after 15 s")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the transaction holding the write lock took %s to run one statement: it waited for others", took.Round(time.Millisecond))
	}
	for range 3 {
		if w := <-writers; w.err != nil {
			t.Errorf("a writer waiting for the lock failed after %s: %v", w.took.Round(time.Millisecond), w.err)
		}
	}
}

// waitUntil waits (up to 5 s) for ok, then a moment more for the waiters
// to settle in their wait.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	time.Sleep(50 * time.Millisecond)
}

// A caller that loses the race to prepare a new text never holds up the
// cache: the statement it prepared is closed in the background. Closing it
// takes the lock of the connection it was prepared on, which a writer
// waiting in BEGIN IMMEDIATE for SQLite's write lock holds for up to the
// busy timeout; under the cache's lock, that had the transaction holding
// the write lock wait 10 s for its next statement, and the writer fail.
func TestLosingARaceToPrepareNeverHoldsUpTheCache(t *testing.T) {
	db := openSQLiteForTest(t)
	sqlDB, err := db.DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const q = "SELECT count(*) FROM agents WHERE name = ? /* prepared twice at once */"
	first, err := sqlDB.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if db.stmts.keep(q, first).stmt != first {
		t.Fatal("the first statement was not kept")
	}

	// T holds the write lock and, once let go, runs a statement.
	holding, next := make(chan struct{}), make(chan struct{})
	tDone := make(chan error, 1)
	go func() {
		tDone <- db.Transaction(func(tx *gorm.DB) error {
			close(holding)
			<-next
			var n int64
			return tx.Raw(agentCountQuery, "none").Scan(&n).Error
		})
	}()
	<-holding
	var held []*sql.Conn
	for sqlDB.Stats().InUse < 3 {
		c, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// The loser is prepared on the last free connection, which a writer
	// then takes to wait for T's lock.
	loser, err := sqlDB.PrepareContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	wDone := make(chan error, 1)
	go func() { wDone <- db.Transaction(func(tx *gorm.DB) error { return nil }) }()
	waitUntil(t, "the writer to wait for the lock", func() bool { return sqlDB.Stats().InUse == 4 })

	start := time.Now()
	if got := db.stmts.keep(q, loser).stmt; got != first {
		t.Fatal("the loser's statement took the place of the one kept first")
	}
	close(next)
	if err := <-tDone; err != nil {
		t.Fatalf("the transaction: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("keeping the loser and the transaction's next statement took %s: the cache waited for the writer", took.Round(time.Millisecond))
	}
	if err := <-wDone; err != nil {
		t.Errorf("the writer waiting for the lock failed: %v", err)
	}
}

// Savepoints (a unique name each) and statements of a schema take no place
// in the cache: only what the server asks again and again does.
func TestOnlyRepeatedStatementsAreCached(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1": true, " insert into x values (1)": true, "UPDATE x SET a = 1": true, "DELETE FROM x": true,
		"WITH a AS (SELECT 1) SELECT * FROM a": true, "REPLACE INTO x VALUES (1)": true,
		"SAVEPOINT sp8231": false, "RELEASE SAVEPOINT sp8231": false, "ROLLBACK TO SAVEPOINT sp1": false,
		"DROP TABLE x": false, "ANALYZE": false, "": false,
	} {
		if got := cacheable(q); got != want {
			t.Errorf("cacheable(%q) = %v; want %v", q, got, want)
		}
	}
}
