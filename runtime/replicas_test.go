package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Two replicas on one database ticking the same timer: while the holder
// lives only it runs; once its lease lapses the other takes over, and never
// do both run the same tick.
func TestRunOnceRunsOnOneReplicaAndFailsOver(t *testing.T) {
	db := modelstest.Open(t)
	clock := &fixedClock{t: time.Now().UTC()}
	a := New(db, Options{Clock: clock, ReplicaID: "rep-a"})
	b := New(db, Options{Clock: clock, ReplicaID: "rep-b"})
	a.dbClock, b.dbClock = clock, clock // the database's clock moves with the test's
	ctx := context.Background()
	var ranA, ranB atomic.Int64
	for range 5 {
		var wg sync.WaitGroup
		wg.Go(func() {
			if ok, err := a.RunOnce(ctx, "tick", 10*time.Second, func(context.Context) { ranA.Add(1) }); err != nil || !ok {
				t.Errorf("a: ran %v, err %v", ok, err)
			}
		})
		wg.Wait()
		if ok, err := b.RunOnce(ctx, "tick", 10*time.Second, func(context.Context) { ranB.Add(1) }); err != nil || ok {
			t.Errorf("b ran a tick a holds: %v, err %v", ok, err)
		}
		clock.add(2 * time.Second)
	}
	clock.add(11 * time.Second) // a stops ticking: its lease lapses
	if ok, err := b.RunOnce(ctx, "tick", 10*time.Second, func(context.Context) { ranB.Add(1) }); err != nil || !ok {
		t.Fatalf("b did not take the lapsed lease: %v, err %v", ok, err)
	}
	if ok, _ := a.RunOnce(ctx, "tick", 10*time.Second, func(context.Context) { ranA.Add(1) }); ok {
		t.Error("a ran after b took the lease over")
	}
	if ranA.Load() != 5 || ranB.Load() != 1 {
		t.Errorf("runs: a %d, b %d; want 5 and 1", ranA.Load(), ranB.Load())
	}

	// Both asking at once for a free lease: exactly one runs.
	for i := range 20 {
		name := "race-" + string(rune('a'+i))
		var ran atomic.Int64
		var wg sync.WaitGroup
		for _, r := range []*Runtime{a, b} {
			wg.Go(func() {
				if _, err := r.RunOnce(ctx, name, time.Minute, func(context.Context) { ran.Add(1) }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if ran.Load() != 1 {
			t.Fatalf("lease %s ran %d times", name, ran.Load())
		}
	}
}

// A replica is alive while it heartbeats and not once it stopped or went
// silent past ReplicaDeadAfter; recovery interrupts only calls of dead
// replicas and of this replica's own earlier run.
func TestRecoveryLeavesLiveReplicasCalls(t *testing.T) {
	db := modelstest.Open(t)
	_, _, sess := skillSession(t, db)
	clock := &fixedClock{t: time.Now().UTC()}
	ctx := context.Background()
	a := New(db, Options{Clock: clock, ReplicaID: "rep-a", ReplicaURL: "http://a.internal:8080"})
	a.dbClock = clock // the database's clock moves with the test's
	if err := a.registerReplica(ctx); err != nil {
		t.Fatal(err)
	}
	call := func(id, replica string) {
		now := clock.Now()
		if err := db.Create(&models.ToolCall{ID: id, SessionID: sess.ID, VersionID: sess.Version, Status: CallRunning, ReplicaID: replica, CreatedAt: now, StartedAt: &now}).Error; err != nil {
			t.Fatal(err)
		}
	}
	call("call_a", "rep-a")
	call("call_b_old", "rep-b") // b's earlier run: b restarts under the same id
	call("call_gone", "rep-gone")
	call("call_legacy", "")

	b := New(db, Options{Clock: clock, ReplicaID: "rep-b"})
	b.dbClock = clock
	if url, alive, err := b.ReplicaAlive(ctx, "rep-a"); err != nil || !alive || url != "http://a.internal:8080" {
		t.Fatalf("ReplicaAlive(rep-a) = %q %v %v", url, alive, err)
	}
	if _, alive, _ := b.ReplicaAlive(ctx, "rep-gone"); alive {
		t.Fatal("an unknown replica is alive")
	}
	if err := b.registerReplica(ctx); err != nil {
		t.Fatal(err)
	}
	b.recover(ctx)
	status := func(id string) string {
		var c models.ToolCall
		db.First(&c, "id = ?", id)
		return c.Status
	}
	want := map[string]string{"call_a": CallRunning, "call_b_old": CallFailed, "call_gone": CallFailed, "call_legacy": CallFailed}
	for id, st := range want {
		if got := status(id); got != st {
			t.Errorf("after b's start %s is %s, want %s", id, got, st)
		}
	}

	// a goes silent: the periodic reaper on b interrupts its call once.
	clock.add(ReplicaDeadAfter / 2)
	b.heartbeat(ctx)
	b.Reap(ctx)
	if got := status("call_a"); got != CallRunning {
		t.Fatalf("b interrupted live a's call (%s) before a's heartbeat lapsed", got)
	}
	clock.add(ReplicaDeadAfter)
	b.heartbeat(ctx)
	if _, alive, _ := b.ReplicaAlive(ctx, "rep-a"); alive {
		t.Fatal("a is alive after its heartbeat lapsed")
	}
	b.Reap(ctx)
	b.Reap(ctx)
	if got := status("call_a"); got != CallFailed {
		t.Fatalf("dead a's call is %s, want failed", got)
	}
	var n int64
	db.Model(&models.Action{}).Where("verb = ? AND targets LIKE ?", "ToolCall.interrupt", "%call_a%").Count(&n)
	if n != 1 {
		t.Errorf("dead a's call has %d ToolCall.interrupt Actions, want 1", n)
	}

	// A graceful stop marks the replica stopped at once.
	b.stopReplica(ctx)
	if _, alive, _ := a.ReplicaAlive(ctx, "rep-b"); alive {
		t.Error("b is alive after its graceful stop")
	}
}
