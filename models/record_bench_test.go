package models_test

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"gorm.io/gorm"
)

// BenchmarkCallRecord (issue 11) is the floor under every call's opening
// record: one transaction inserting a running tool call and its
// ToolCall.create Action, as the hot path writes them on SQLite (on
// PostgreSQL the hot path sends them as one statement instead). "hot" runs
// the transactions back to back; "after_pause" waits 50 ms (not timed)
// before each, as the hot-path benchmarks do between calls and as a
// model's calls come: the same work then finds the CPU's caches cold.
// IDs are random, as the runtime's are, so each insert lands anywhere in
// the primary keys' indexes. us-tx is the mean time of one transaction.
func BenchmarkCallRecord(b *testing.B) {
	for _, pause := range []time.Duration{0, 50 * time.Millisecond} {
		name := "hot"
		if pause > 0 {
			name = "after_pause"
		}
		b.Run(name, func(b *testing.B) {
			db := modelstest.Open(b)
			sessionID := seedSession(b, db)
			var total time.Duration
			n := 0
			for b.Loop() {
				if pause > 0 {
					time.Sleep(pause)
				}
				t0 := time.Now()
				call := models.ToolCall{ID: "call_" + rand.Text(), SessionID: sessionID, VersionID: "ver_bench",
					Tool: "sandbox__workbench__exec", Kind: "sandbox", GrantName: "workbench", ToolName: "exec",
					Input: `{"command":"true"}`, Status: "running", Verdict: "allow", PolicySource: "granted",
					ByKind: "session", ByID: sessionID, ByLabel: "session " + sessionID, CreatedAt: t0, StartedAt: &t0}
				act := models.Action{ID: "act_" + rand.Text(), Verb: "ToolCall.create", ByKind: "session",
					ByID: sessionID, ByLabel: call.ByLabel, Targets: sessionID + " " + call.ID, Verdict: "allowed",
					Version: "ver_bench", CreatedAt: t0}
				err := db.Transaction(func(tx *gorm.DB) error {
					if err := tx.Create(&call).Error; err != nil {
						return err
					}
					return tx.Create(&act).Error
				})
				if err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
				n++
			}
			b.ReportMetric(float64(total.Microseconds())/float64(n), "us-tx")
		})
	}
}

// seedSession writes the agent, version and session a call's row refers to.
func seedSession(b *testing.B, db *models.DB) string {
	b.Helper()
	now := time.Now()
	for _, row := range []any{
		&models.Agent{ID: "agt_bench", Name: "bench", CreatedAt: now, UpdatedAt: now},
		&models.Version{ID: "ver_bench", AgentID: "agt_bench", Number: 1, State: "published", Config: "{}", CreatedAt: now, UpdatedAt: now, PublishedAt: &now},
		&models.Session{ID: "ses_bench", VersionID: "ver_bench", AgentID: "agt_bench", State: "active", TokenHash: "x", CreatedAt: now},
	} {
		if err := db.Create(row).Error; err != nil {
			b.Fatal(err)
		}
	}
	return "ses_bench"
}
