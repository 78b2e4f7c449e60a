package web_test

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// listSeed is what seedLists wrote: n of each listed row, all before base,
// in an agent's published version's sessions.
type listSeed struct {
	n       int
	base    time.Time
	agent   string
	version string
	vault   string
}

// at is when the i-th row of each kind was made.
func (s listSeed) at(i int) time.Time { return s.base.Add(-time.Duration(i/3) * time.Second) }

// seedID names the i-th seeded row of a kind: ids the cursor accepts, and
// that a page's text shows only where that row is.
func seedID(prefix string, i int) string { return fmt.Sprintf("%s_seed%07d", prefix, i) }

// seedLists writes n sessions (with a vault each), n actions, n decided
// approvals with their calls, n sandboxes and n usage records straight into
// the database in batches, as history a busy server would have. Times step
// back from base one second every three rows, so pages must break ties by
// id. The agent, version and vault are made through the runtime.
func seedLists(tb testing.TB, rt *runtime.Runtime, owner runtime.Principal, n int) listSeed {
	tb.Helper()
	ctx := tb.Context()
	name := "seeded"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	if err != nil {
		tb.Fatal(err)
	}
	ver, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: []byte(`{"builtins": [{"name": "session"}]}`)})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := rt.VersionPublish(ctx, owner, ver.ID); err != nil {
		tb.Fatal(err)
	}
	vlt, err := rt.VaultCreate(ctx, owner, runtime.VaultInput{Name: "seeded"})
	if err != nil {
		tb.Fatal(err)
	}
	s := listSeed{n: n, base: time.Now().UTC().Add(-time.Hour).Truncate(time.Second), agent: a.ID, version: ver.ID, vault: vlt.ID}
	at := s.at
	const batch = 1000
	err = rt.DB().Transaction(func(tx *gorm.DB) error {
		for lo := 0; lo < n; lo += batch {
			hi := min(lo+batch, n)
			var (
				ss    []models.Session
				svs   []models.SessionVault
				acts  []models.Action
				calls []models.ToolCall
				aps   []models.Approval
				sbs   []models.Sandbox
				uses  []models.UsageRecord
			)
			for i := lo; i < hi; i++ {
				t := at(i)
				sid := seedID("ses", i)
				ss = append(ss, models.Session{ID: sid, VersionID: ver.ID, AgentID: a.ID, Title: fmt.Sprintf("Seeded %d", i),
					State: runtime.SessionEnded, TokenHash: seedID("hash", i), CreatedBy: owner.ID, CreatedAt: t, EndedAt: &t})
				svs = append(svs, models.SessionVault{SessionID: sid, VaultID: vlt.ID})
				acts = append(acts, models.Action{ID: seedID("act", i), Verb: "Agent.update", ByKind: "user", ByID: owner.ID,
					ByLabel: owner.Label, Targets: seedID("tgt", i), Verdict: runtime.VerdictAllowed, CreatedAt: t})
				calls = append(calls, models.ToolCall{ID: seedID("call", i), SessionID: sid, VersionID: ver.ID, Tool: "builtin__session__rename",
					Kind: "builtin", GrantName: "session", ToolName: "rename", Input: `{"title":"x"}`, Status: "succeeded", Verdict: "ask",
					ByKind: "session", ByID: sid, ByLabel: "session " + sid, CreatedAt: t, StartedAt: &t, FinishedAt: &t})
				decided := t.Add(time.Minute)
				aps = append(aps, models.Approval{ID: seedID("apr", i), ToolCallID: seedID("call", i), SessionID: sid, AgentID: a.ID,
					Tool: "builtin__session__rename", GrantName: "session", State: runtime.ApprovalApproved,
					Scope: "call", DecidedBy: owner.ID, DecidedByLabel: owner.Label, CreatedAt: t, DecidedAt: &decided, ExpiresAt: t.Add(time.Hour)})
				sbs = append(sbs, models.Sandbox{ID: seedID("sbx", i), SessionID: sid, GrantName: "workbench", ReleaseName: "2026",
					Network: "none", State: "retired", StartedAt: &t, RetiredAt: &t, CreatedAt: t})
				uses = append(uses, models.UsageRecord{ID: seedID("use", i), Kind: runtime.UsageMachineSeconds, SessionID: sid, AgentID: a.ID,
					Subject: seedID("sub", i), Quantity: 1, Unit: "second", Credits: runtime.PriceMachineSecond, StartedAt: t, EndedAt: t.Add(time.Second)})
			}
			for _, rows := range []any{&ss, &svs, &acts, &calls, &aps, &sbs, &uses} {
				if err := tx.Create(rows).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("seed %d rows: %v", n, err)
	}
	// The usage records went in around RecordUsage: their rollup is built
	// as migration 0028 builds it from records already there.
	if err := rt.RollUpUsage(ctx); err != nil {
		tb.Fatal(err)
	}
	// PostgreSQL's autovacuum would soon gather the new rows' statistics; a
	// planner that still thinks the tables empty plans for empty tables.
	if modelstest.Dialect() == models.Postgres {
		if err := rt.DB().Exec("ANALYZE").Error; err != nil {
			tb.Fatal(err)
		}
	}
	return s
}
