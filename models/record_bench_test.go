package models_test

import (
	"crypto/rand"
	"fmt"
	"strings"
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
// "history" is how many calls (with their Actions) are there first,
// written untimed; "ids" is models.NewID's ids (time, then random bits)
// or wholly random ones of the same length, as ids were made before: a
// random id lands on any leaf of its table's primary-key index, so the
// larger the history, the more of the index a stream of calls reads in
// and writes out. us-tx is the mean time of one transaction.
func BenchmarkCallRecord(b *testing.B) {
	for _, history := range []int{0, 200_000} {
		for _, pause := range []time.Duration{0, 50 * time.Millisecond} {
			for _, ids := range []string{"random", "models"} {
				name := "hot"
				if pause > 0 {
					name = "after_pause"
				}
				b.Run(fmt.Sprintf("history=%d/%s/ids=%s", history, name, ids), func(b *testing.B) {
					benchCallRecord(b, history, pause, ids == "random")
				})
			}
		}
	}
}

func benchCallRecord(b *testing.B, history int, pause time.Duration, random bool) {
	db := modelstest.Open(b)
	sessionID := seedSession(b, db)
	id := func(prefix string) string {
		if random {
			return prefix + "_" + strings.ToLower(rand.Text())
		}
		return models.NewID(prefix)
	}
	record := func(t time.Time, status string) (models.ToolCall, models.Action) {
		call := models.ToolCall{ID: id("call"), SessionID: sessionID, VersionID: "ver_bench",
			Tool: "sandbox__workbench__exec", Kind: "sandbox", GrantName: "workbench", ToolName: "exec",
			Input: `{"command":"true"}`, Status: status, Verdict: "allow", PolicySource: "granted",
			ByKind: "session", ByID: sessionID, ByLabel: "session " + sessionID, CreatedAt: t, StartedAt: &t}
		act := models.Action{ID: id("act"), Verb: "ToolCall.create", ByKind: "session",
			ByID: sessionID, ByLabel: call.ByLabel, Targets: sessionID + " " + call.ID, Verdict: "allowed",
			Version: "ver_bench", CreatedAt: t}
		return call, act
	}
	const batch = 100
	for done := 0; done < history; done += batch {
		calls, acts := make([]models.ToolCall, 0, batch), make([]models.Action, 0, batch)
		for range batch {
			c, a := record(time.Now(), "succeeded")
			calls, acts = append(calls, c), append(acts, a)
		}
		if err := db.Create(&calls).Error; err != nil {
			b.Fatal(err)
		}
		if err := db.Create(&acts).Error; err != nil {
			b.Fatal(err)
		}
	}
	var total time.Duration
	n := 0
	for b.Loop() {
		if pause > 0 {
			time.Sleep(pause)
		}
		t0 := time.Now()
		call, act := record(t0, "running")
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
}

// seedSession writes the agent, version and session a call's row refers to.
func seedSession(b testing.TB, db *models.DB) string {
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
