package models

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

//go:embed migrations
var migrationFiles embed.FS

// Migration is one embedded SQL file: migrations/<dialect>/NNNN_name.sql.
// Files are append-only: a released migration is never edited, only followed.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations lists the embedded migrations for a dialect in version order.
func Migrations(d Dialect) ([]Migration, error) {
	dir := "migrations/" + string(d)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("models: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("models: migration %s: name must start with a number and _", name)
		}
		body, err := fs.ReadFile(migrationFiles, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate applies every migration not yet recorded in schema_migrations, each in
// its own transaction with its record, and returns the versions it applied.
func (d *DB) Migrate() ([]int, error) {
	if d.plain != nil {
		// Migration files hold several statements: not prepared.
		d = &DB{DB: d.plain, Dialect: d.Dialect}
	}
	// CREATE TABLE IF NOT EXISTS is not safe against itself on PostgreSQL:
	// it too runs under the lock.
	err := d.Transaction(func(tx *gorm.DB) error {
		if err := d.lock(tx); err != nil {
			return err
		}
		return tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMP NOT NULL)`).Error
	})
	if err != nil {
		return nil, fmt.Errorf("models: create schema_migrations: %w", err)
	}
	all, err := Migrations(d.Dialect)
	if err != nil {
		return nil, err
	}
	var done []int
	if err := d.Raw(`SELECT version FROM schema_migrations`).Scan(&done).Error; err != nil {
		return nil, fmt.Errorf("models: read schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	for _, v := range done {
		applied[v] = true
	}
	var ran []int
	for _, m := range all {
		if applied[m.Version] {
			continue
		}
		applied := false
		err := d.Transaction(func(tx *gorm.DB) error {
			// Replicas starting together take turns on PostgreSQL; the second
			// finds the migration recorded by the first and skips it.
			if err := d.lock(tx); err != nil {
				return err
			}
			var n int64
			if err := tx.Raw(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n).Error; err != nil || n > 0 {
				return err
			}
			if err := tx.Exec(m.SQL).Error; err != nil {
				return err
			}
			applied = true
			return tx.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UTC()).Error
		})
		if err != nil {
			return ran, fmt.Errorf("models: migration %s: %w", m.Name, err)
		}
		if applied {
			ran = append(ran, m.Version)
		}
	}
	return ran, nil
}

// lock makes replicas migrating one PostgreSQL database take turns, for the
// rest of the transaction. SQLite's write lock already does.
func (d *DB) lock(tx *gorm.DB) error {
	if d.Dialect != Postgres {
		return nil
	}
	return tx.Exec(`SELECT pg_advisory_xact_lock(7734201)`).Error
}
