package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/sandbox"
)

// skewedClock is the wall clock off by a fixed amount, as on a machine
// whose NTP stopped.
type skewedClock struct{ by time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.by) }

// Three replicas on one PostgreSQL database, one with a good clock, one
// 10 minutes ahead, one 10 minutes behind: heartbeats, leases and "is it
// dead" are counted on the database's clock, so none looks dead to the
// others, none takes a lease or a sandbox another holds, and each holds
// its own for the lease's length, not 10 minutes more or less.
func TestSkewedClocksNeitherLookDeadNorStealLeases(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.Postgres {
		t.Skip("replicas share PostgreSQL only")
	}
	if err := db.Exec("ALTER TABLE sandboxes DROP CONSTRAINT sandboxes_session_id_fkey").Error; err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _, sess := skillSession(t, db)
	rts := map[string]*Runtime{}
	for id, skew := range map[string]time.Duration{"rep-ok": 0, "rep-ahead": 10 * time.Minute, "rep-behind": -10 * time.Minute} {
		r := New(db, Options{ReplicaID: id, ReplicaURL: "http://" + id, Clock: skewedClock{skew}})
		if err := r.registerReplica(ctx); err != nil {
			t.Fatal(err)
		}
		r.heartbeat(ctx)
		rts[id] = r
	}
	dbNow := func() time.Time {
		var now time.Time
		if err := db.Raw("SELECT now()").Scan(&now).Error; err != nil {
			t.Fatal(err)
		}
		return now
	}

	// Liveness: every replica sees every other alive.
	for from, r := range rts {
		for id := range rts {
			if _, alive, err := r.ReplicaAlive(ctx, id); err != nil || !alive {
				t.Errorf("%s sees %s dead (err %v)", from, id, err)
			}
		}
	}

	// The reaper of each leaves the others' running calls alone.
	for id := range rts {
		now := time.Now()
		if err := db.Create(&models.ToolCall{ID: "call_" + id, SessionID: sess.ID, VersionID: sess.Version, Status: CallRunning,
			ReplicaID: id, CreatedAt: now, StartedAt: &now}).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rts {
		r.Reap(ctx)
	}
	var interrupted []string
	db.Model(&models.ToolCall{}).Where("status <> ?", CallRunning).Pluck("id", &interrupted)
	if len(interrupted) > 0 {
		t.Errorf("a reaper interrupted live replicas' calls: %v", interrupted)
	}

	// Timer leases: whoever holds one keeps it against the others.
	for holder, r := range rts {
		name := "tick-" + holder
		if ok, err := r.RunOnce(ctx, name, 10*time.Second, func(context.Context) {}); err != nil || !ok {
			t.Fatalf("%s could not take a free lease: %v %v", holder, ok, err)
		}
		var expires time.Time
		db.Raw("SELECT expires_at FROM leases WHERE name = ?", name).Scan(&expires)
		if d := expires.Sub(dbNow()); d < 5*time.Second || d > 11*time.Second {
			t.Errorf("%s's 10 s lease ends in %s by the database's clock", holder, d.Round(time.Second))
		}
		for other, o := range rts {
			if other == holder {
				continue
			}
			if ok, err := o.RunOnce(ctx, name, 10*time.Second, func(context.Context) {}); err != nil || ok {
				t.Errorf("%s took %s's live lease (ran %v, err %v)", other, holder, ok, err)
			}
		}
	}

	// Sandboxes: each replica runs one, with the lease its heartbeat
	// renews; no other may claim it, and the lease ends SandboxLeaseTTL
	// from the database's now.
	for holder, r := range rts {
		id := "sbx_" + holder
		store := sandboxStore{db: db, owner: func() string { return holder }, clock: r.dbNow}
		started := time.Now()
		if err := store.Put(ctx, sandbox.Record{ID: id, SessionID: "ses_" + holder, Grant: "workbench", State: sandbox.StateRunning, StartedAt: started}); err != nil {
			t.Fatal(err)
		}
		if err := r.renewSandboxLeases(ctx); err != nil {
			t.Fatal(err)
		}
		var m models.Sandbox
		db.First(&m, "id = ?", id)
		if m.ReplicaID != holder || m.LeaseExpiresAt == nil {
			t.Fatalf("%s's sandbox names %q, lease %v", holder, m.ReplicaID, m.LeaseExpiresAt)
		}
		if d := m.LeaseExpiresAt.Sub(dbNow()); d < SandboxLeaseTTL-5*time.Second || d > SandboxLeaseTTL+time.Second {
			t.Errorf("%s's sandbox lease ends in %s by the database's clock, want about %s", holder, d.Round(time.Second), SandboxLeaseTTL)
		}
		for other, o := range rts {
			if other == holder {
				continue
			}
			_, err := sandboxOwnership{o}.Claim(ctx, id)
			var owned *sandbox.OwnedError
			if !errors.As(err, &owned) || owned.Replica != holder {
				t.Errorf("%s claiming %s's running sandbox: %v, want owned by %s", other, holder, err, holder)
			}
		}
	}
	for _, r := range rts {
		if err := r.suspendOrphans(ctx); err != nil {
			t.Error(err)
		}
	}
	var suspended int64
	db.Model(&models.Sandbox{}).Where("state <> ?", string(sandbox.StateRunning)).Count(&suspended)
	if suspended > 0 {
		t.Errorf("the orphan sweep suspended %d live replicas' sandboxes", suspended)
	}

	// The console's list agrees.
	views, err := rts["rep-ahead"].Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if !v.Alive {
			t.Errorf("the replicas list on rep-ahead says %s is dead", v.ID)
		}
	}
}
