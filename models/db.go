// Package models holds Subako's persistent records, opens the database (SQLite
// by default, PostgreSQL by URL) and applies the embedded, versioned migrations.
// It knows nothing of HTTP, permissions or policy: those live in runtime.
package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/libtnb/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	moderncsqlite "modernc.org/sqlite"
)

// Dialect names the SQL dialect a database speaks; migrations are kept per dialect.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is an open database and the dialect it speaks.
type DB struct {
	*gorm.DB
	Dialect Dialect
	// plain is the same pool without the prepared-statement cache, for
	// migrations: a migration file holds several statements, which neither
	// SQLite nor PostgreSQL can prepare as one.
	plain *gorm.DB
	// noFlushWait is, on PostgreSQL, the same database (and the same gorm
	// callbacks) over a second pool whose connections commit with
	// synchronous_commit off (NoFlushWait).
	noFlushWait    *gorm.DB
	noFlushWaitSQL *sql.DB
	stmts          *stmtCache // SQLite's prepared statements
}

// NoFlushWait is the database for writes whose commit need not wait for
// PostgreSQL's log to reach the disk (synchronous_commit off on its
// connections): the commit is in the database, seen by every reader and
// kept through a crash of Subako, but a crash of PostgreSQL itself may lose
// it until the log is flushed (runtime/pgflush.go makes it durable). On
// SQLite it is the database itself (no commit waits for a flush there).
func (d *DB) NoFlushWait() *gorm.DB {
	if d.noFlushWait != nil {
		return d.noFlushWait
	}
	return d.DB
}

// withNoFlushWait adds NoFlushWait's pool for the PostgreSQL database at url.
func (d *DB) withNoFlushWait(url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("models: postgres url: %w", err)
	}
	cfg.RuntimeParams["synchronous_commit"] = "off"
	sqlDB := stdlib.OpenDB(*cfg)
	sqlDB.SetMaxIdleConns(pgIdleConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	// A Context makes Session copy the Statement: without it the new handle
	// shares d.DB's, and setting its pool would move d.DB to this one too.
	s := d.DB.Session(&gorm.Session{NewDB: true, Context: context.Background()})
	s.Statement.ConnPool = commitPool{DB: sqlDB}
	d.noFlushWait, d.noFlushWaitSQL = s, sqlDB
	return nil
}

// Statements are prepared once per connection and kept, so a call's queries
// are not parsed again on every call (on the pure-Go SQLite driver parsing
// was a fifth of a write's CPU).
const pgIdleConns = 16

// prepared wraps a freshly opened database in the pool that runs code after
// commits (commit.go); on SQLite its statements run prepared.
//
// On PostgreSQL the driver (pgx) already prepares every statement once per
// connection and keeps it (its statement cache, 512 a connection), inside
// transactions too. On SQLite, modernc.org/sqlite keeps the compiled
// statement of a prepared one (since v1.41), so there the pool's statement
// cache (stmtCache) is what spares the parse, transactions' statements
// included.
func prepared(db *gorm.DB, d Dialect) *DB {
	sqlDB, err := db.DB()
	if err != nil {
		return &DB{DB: db, Dialect: d, plain: db}
	}
	pool := commitPool{DB: sqlDB}
	if d == SQLite {
		pool.stmts = newStmtCache(sqlDB)
	}
	db.Config.ConnPool = pool
	// A Context makes Session copy the Statement: without it the new handle
	// shares db's, and setting its pool would give plain the statement
	// cache too (a migration file, several statements, cannot be prepared
	// as one).
	s := db.Session(&gorm.Session{NewDB: true, Context: context.Background()})
	s.Statement.ConnPool = pool
	return &DB{DB: s, Dialect: d, plain: db, stmts: pool.stmts}
}

// Open connects to url when it is set (postgres:// or postgresql://), else to
// SQLite at dataDir/subako.db, creating the folder. It does not migrate.
func Open(dataDir, url string) (*DB, error) {
	// SkipDefaultTransaction: a single write is atomic on its own; the
	// writes that belong together run in an explicit transaction.
	cfg := &gorm.Config{Logger: logger.Discard, NowFunc: func() time.Time { return time.Now().UTC() },
		SkipDefaultTransaction: true}
	if url != "" {
		if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
			return nil, fmt.Errorf("models: database-url must start with postgres:// or postgresql://")
		}
		db, err := gorm.Open(postgres.Open(url), cfg)
		if err != nil {
			return nil, fmt.Errorf("models: open postgres: %w", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			return nil, fmt.Errorf("models: postgres handle: %w", err)
		}
		// Connections are kept, not closed as soon as more than two are idle
		// (database/sql's default): a new connection costs a backend's start
		// and every statement prepared again, and concurrent calls would pay
		// it on every burst.
		sqlDB.SetMaxIdleConns(pgIdleConns)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		d := prepared(db, Postgres)
		if err := d.withNoFlushWait(url); err != nil {
			_ = sqlDB.Close()
			return nil, err
		}
		return d, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("models: create data folder: %w", err)
	}
	path := filepath.Join(dataDir, "subako.db")
	// WAL lets readers run beside the one writer; the busy timeout makes a second
	// writer wait instead of failing with SQLITE_BUSY. It comes first: switching
	// to WAL takes a lock too, and a second process opening the file at the
	// same moment must wait for it rather than fail.
	// Times are written and read as glebarez/sqlite did, so a database it
	// wrote reads the same: text "2006-01-02 15:04:05.999999999-07:00"
	// (_time_format=sqlite), converted back only in columns declared DATE,
	// DATETIME or TIMESTAMP (_texttotime=0: an untyped expression such as
	// date(started_at) stays a string; _inttotime=0: integers stay integers).
	// The dialect (libtnb/sqlite) also turns on, process-wide, strict DSN
	// pragmas, fdatasync for commits and OFD locks on the database file (the
	// WAL index keeps POSIX locks; LockSQLite's flock is on a file of its own).
	dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate" +
		"&_time_format=sqlite&_texttotime=0&_inttotime=0"
	db, err := openSQLite(dsn, cfg)
	if err != nil {
		return nil, fmt.Errorf("models: open sqlite %s: %w", path, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("models: sqlite handle: %w", err)
	}
	// One writer at a time is SQLite's model; a small pool keeps readers concurrent.
	sqlDB.SetMaxOpenConns(4)
	sqlDB.SetMaxIdleConns(4) // kept open: each keeps its prepared statements

	return prepared(db, SQLite), nil
}

// sqliteOpenPatience bounds how long openSQLite retries a database another
// connection is switching to WAL: as long as the busy timeout.
const sqliteOpenPatience = 10 * time.Second

// openSQLite opens dsn, retrying while SQLite answers SQLITE_BUSY. Two
// processes (or pools) opening a new database at once both switch it to WAL,
// which takes an exclusive lock; SQLite refuses the second at once rather
// than calling its busy handler, since waiting could deadlock, so the busy
// timeout does not cover it.
func openSQLite(dsn string, cfg *gorm.Config) (*gorm.DB, error) {
	deadline := time.Now().Add(sqliteOpenPatience)
	pause := 5 * time.Millisecond
	for {
		db, err := gorm.Open(sqlite.Open(dsn), cfg)
		if err == nil {
			return db, nil
		}
		if db != nil {
			if sqlDB, e := db.DB(); e == nil {
				_ = sqlDB.Close()
			}
		}
		var se *moderncsqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().Add(pause).After(deadline) {
			return nil, err
		}
		time.Sleep(pause)
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// sqliteBusy is SQLITE_BUSY, the primary code (the low byte) of an extended one.
const sqliteBusy = 5

// Close releases the connection pool.
func (d *DB) Close() error {
	sqlDB, err := d.DB.DB()
	if err != nil {
		return err
	}
	if d.noFlushWaitSQL != nil {
		_ = d.noFlushWaitSQL.Close()
	}
	d.stmts.close()
	return sqlDB.Close()
}
