package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// /readyz says not ready while the database cannot write, though it still
// answers reads, and ready again once it can.
func TestReadyzNotReadyWhenDatabaseCannotWrite(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	if resp, body := b.get("/readyz"); resp.StatusCode != 200 || !strings.Contains(body, "ready") {
		t.Fatalf("readyz on a healthy database: %d %q", resp.StatusCode, body)
	}
	sqlDB, err := e.rt.DB().DB.DB()
	if err != nil {
		t.Fatal(err)
	}
	// Another writer holds the write lock: the database answers a ping but
	// no write of this server goes through.
	tx, err := sqlDB.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if modelstest.Dialect() == models.Postgres {
		_, err = tx.Exec("LOCK TABLE readiness_probes IN ACCESS EXCLUSIVE MODE")
	} else {
		_, err = tx.Exec("DELETE FROM readiness_probes")
	}
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(3 * time.Second) // past the cached answer
	resp, body := b.get("/readyz")
	if err := sqlDB.PingContext(t.Context()); err != nil {
		t.Fatalf("the database stopped answering: %v", err)
	}
	_ = tx.Rollback()
	if resp.StatusCode != 503 || !strings.Contains(body, "cannot write") {
		t.Fatalf("readyz while writes stall: %d %q, want 503", resp.StatusCode, body)
	}
	// Once writes go through again (and the stalled probe has ended), ready.
	for range 100 {
		e.clock.Advance(3 * time.Second)
		if resp, _ := b.get("/readyz"); resp.StatusCode == 200 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("readyz stayed not ready after writes resumed")
}
