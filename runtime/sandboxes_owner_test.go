package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/sandbox"
)

// Replicas racing for one sandbox: exactly one takes it, with one
// conditional UPDATE, whether it is suspended (anyone may start it) or
// left running by a dead replica whose lease ran out (a failover, counted
// once, its note saying what was lost); the others are told who holds it.
func TestOneReplicaClaimsASandboxWhenSeveralRace(t *testing.T) {
	db, rts := replicasOnPostgres(t, "rep-a", "rep-b", "rep-c")
	ctx := context.Background()
	now := time.Now().UTC()
	archived := now.Add(-time.Hour)
	for _, tc := range []struct {
		name, state, owner string
		lease              *time.Time
		failover           bool
	}{
		{"suspended", "suspended", "", nil, false},
		{"left running by a dead replica", "running", "rep-dead", leaseAt(now.Add(-time.Second)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "sbx_" + tc.state
			started := now.Add(-2 * time.Hour)
			if err := db.Create(&models.Sandbox{ID: id, SessionID: "ses_" + tc.state, GrantName: "workbench", State: tc.state,
				ReplicaID: tc.owner, LeaseExpiresAt: tc.lease, StartedAt: &started, ArchiveAt: &archived, ArchiveBytes: 10}).Error; err != nil {
				t.Fatal(err)
			}
			before := int64(0)
			for _, r := range rts {
				before += r.cluster().failovers.Load()
			}
			var mu sync.Mutex
			won := map[string]int{}
			var wg sync.WaitGroup
			for i := range 12 {
				r := rts[i%len(rts)]
				wg.Go(func() {
					_, err := sandboxOwnership{r}.Claim(ctx, id)
					var owned *sandbox.OwnedError
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won[r.Replica().ID]++
					case errors.As(err, &owned):
					default:
						t.Errorf("claim on %s: %v", r.Replica().ID, err)
					}
				})
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("replicas that took the sandbox: %v; want exactly one", won)
			}
			var m models.Sandbox
			db.First(&m, "id = ?", id)
			for winner := range won {
				if m.ReplicaID != winner {
					t.Errorf("the sandbox names %q, but %s took it", m.ReplicaID, winner)
				}
			}
			after := int64(0)
			for _, r := range rts {
				after += r.cluster().failovers.Load()
			}
			if want := map[bool]int64{true: 1, false: 0}[tc.failover]; after-before != want {
				t.Errorf("failovers counted: %d, want %d", after-before, want)
			}
			if tc.failover && m.ArchiveNote == "" {
				t.Errorf("a failover left no note of what it lost")
			}
		})
	}
}

func leaseAt(t time.Time) *time.Time { return &t }

// replicasOnPostgres is one fresh PostgreSQL test database (skipped on
// SQLite: replicas share PostgreSQL only) and a registered Runtime for each
// replica id, its URL http://<id>. The sandboxes' sessions do not matter to
// these tests, so their foreign key is dropped.
func replicasOnPostgres(t *testing.T, ids ...string) (*models.DB, []*Runtime) {
	t.Helper()
	db := modelstest.Open(t)
	if db.Dialect != models.Postgres {
		t.Skip("replicas share PostgreSQL only")
	}
	if err := db.Exec("ALTER TABLE sandboxes DROP CONSTRAINT sandboxes_session_id_fkey").Error; err != nil {
		t.Fatal(err)
	}
	var rts []*Runtime
	for _, id := range ids {
		r := New(db, Options{ReplicaID: id, ReplicaURL: "http://" + id})
		if err := r.registerReplica(context.Background()); err != nil {
			t.Fatal(err)
		}
		rts = append(rts, r)
	}
	return db, rts
}
