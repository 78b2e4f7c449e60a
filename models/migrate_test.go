package models_test

import (
	"testing"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

func TestMigrateFromEmptyAndAgain(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db, err := models.Open(dir, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dialect != modelstest.Dialect() {
		t.Fatalf("dialect %s, want %s", db.Dialect, modelstest.Dialect())
	}
	all, err := models.Migrations(db.Dialect)
	if err != nil || len(all) == 0 {
		t.Fatalf("no embedded migrations: %v", err)
	}
	ran, err := db.Migrate()
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if len(ran) != len(all) {
		t.Fatalf("applied %v, want all %d", ran, len(all))
	}
	if err := db.Create(&models.Agent{ID: "ag_1", Name: "keep me"}).Error; err != nil {
		t.Fatal(err)
	}
	db.Close()

	// A restart on the same database applies nothing and loses nothing.
	db, err = models.Open(dir, url)
	if err != nil {
		t.Fatal(err)
	}
	ran, err = db.Migrate()
	if err != nil || len(ran) != 0 {
		t.Fatalf("second migrate ran %v, err %v; want nothing", ran, err)
	}
	var a models.Agent
	if err := db.First(&a, "id = ?", "ag_1").Error; err != nil || a.Name != "keep me" {
		t.Fatalf("row lost across restart: %+v %v", a, err)
	}
	var versions []int
	db.Raw("SELECT version FROM schema_migrations ORDER BY version").Scan(&versions)
	if len(versions) != len(all) {
		t.Fatalf("schema_migrations holds %v", versions)
	}
}

func TestMigrationsMatchAcrossDialects(t *testing.T) {
	lite, _ := models.Migrations(models.SQLite)
	pg, _ := models.Migrations(models.Postgres)
	if len(lite) != len(pg) {
		t.Fatalf("sqlite has %d migrations, postgres %d: every migration needs both", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].Name != pg[i].Name {
			t.Errorf("migration %d: sqlite %s, postgres %s", i, lite[i].Name, pg[i].Name)
		}
	}
}

func TestOpenRejectsOtherURLs(t *testing.T) {
	if _, err := models.Open(t.TempDir(), "mysql://x"); err == nil {
		t.Fatal("a mysql URL was accepted")
	}
}

// Servers starting at once over one database apply each migration once.
func TestConcurrentMigrate(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	const n = 3
	errs := make(chan error, n)
	for range n {
		go func() {
			db, err := models.Open(dir, url)
			if err == nil {
				_, err = db.Migrate()
				db.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a concurrent migrate failed: %v", err)
		}
	}
}
