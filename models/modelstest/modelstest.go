// Package modelstest opens a fresh, migrated database for a test: SQLite in a
// temporary folder by default, or a new PostgreSQL database when
// SUBAKO_TEST_DATABASE_URL is set, so the same suite runs on both.
package modelstest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/subako/subako/models"
)

// EnvURL names the variable that selects PostgreSQL for tests.
const EnvURL = "SUBAKO_TEST_DATABASE_URL"

// Open returns a fresh, migrated database that is removed when the test ends.
func Open(t testing.TB) *models.DB {
	t.Helper()
	dir, url := Fresh(t)
	db, err := models.Open(dir, url)
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}

// Fresh returns a data folder and a database URL ("" for SQLite) naming an
// empty database of the dialect under test, without opening or migrating it.
func Fresh(t testing.TB) (dataDir, dbURL string) {
	t.Helper()
	dataDir = t.TempDir()
	base := os.Getenv(EnvURL)
	if base == "" {
		return dataDir, ""
	}
	return dataDir, createPostgres(t, base)
}

// Dialect is the dialect the suite runs on.
func Dialect() models.Dialect {
	if os.Getenv(EnvURL) != "" {
		return models.Postgres
	}
	return models.SQLite
}

func createPostgres(t testing.TB, base string) string {
	admin, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("connect to %s=%s: %v", EnvURL, base, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "subako_test_" + hex.EncodeToString(b)
	if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		if sqlDB, err := admin.DB(); err == nil {
			sqlDB.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}
