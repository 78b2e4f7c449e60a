package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// A warm exec on PostgreSQL skips its sandbox's row only while this
// replica's lease surely holds (leaseMemo): at every moment it says so, no
// other replica can take the sandbox, and once it could be taken (the
// lease ran out, its replica looks dead) the memory has long stopped
// answering, so the next exec reads the row and goes to the new owner. A
// renewal that no longer returns the sandbox (taken over meanwhile) drops
// it at once, whatever the clock says.
func TestLeaseInMemoryEndsBeforeAnotherReplicaCanTakeTheSandbox(t *testing.T) {
	db, rts := replicasOnPostgres(t, "rep-a", "rep-b")
	a, b := rts[0], rts[1]
	ctx := context.Background()
	clock := &fixedClock{t: time.Now().UTC()} // the database's clock, shared
	a.dbClock, b.dbClock = clock, clock
	a.heartbeat(ctx)
	b.heartbeat(ctx)
	started := clock.Now()
	if err := db.Create(&models.Sandbox{ID: "sbx_lease", SessionID: "ses_lease", GrantName: "workbench", State: "suspended",
		StartedAt: &started}).Error; err != nil {
		t.Fatal(err)
	}
	held := func() bool {
		l := a.leases()
		l.mu.Lock()
		defer l.mu.Unlock()
		until, ok := l.until["ses_lease\x00workbench"]
		return ok && a.leaseClock().Before(until)
	}
	if _, err := (sandboxOwnership{a}).Claim(ctx, "sbx_lease"); err != nil {
		t.Fatal(err)
	}
	if !held() {
		t.Fatal("after its claim, A does not know it holds the sandbox")
	}
	// A renews once, later; then A stops (no heartbeat, no renewal).
	clock.add(4 * time.Second)
	if err := a.renewSandboxLeases(ctx); err != nil {
		t.Fatal(err)
	}
	clock.add(7 * time.Second) // past what the claim alone would hold
	if !held() {
		t.Fatal("A's renewal did not extend what A knows it holds")
	}
	tookOver := false
	for step := 0; step < 40 && !tookOver; step++ {
		clock.add(time.Second)
		b.heartbeat(ctx)
		memo := held()
		_, err := (sandboxOwnership{b}).Claim(ctx, "sbx_lease")
		var owned *sandbox.OwnedError
		switch {
		case err == nil:
			tookOver = true
			if memo {
				t.Fatalf("B took the sandbox over %d s after A's renewal while A's memory still said A holds it", step+1)
			}
		case errors.As(err, &owned):
		default:
			t.Fatal(err)
		}
	}
	if !tookOver {
		t.Fatal("B never took over the sandbox of a replica that stopped")
	}
	if held() {
		t.Fatal("A's memory holds a sandbox B took over")
	}
	// Even with a clock that says otherwise, A's next renewal, which no
	// longer finds the sandbox A's, forgets it.
	a.leases().hold("ses_lease", "workbench", a.leaseClock())
	if err := a.renewSandboxLeases(ctx); err != nil {
		t.Fatal(err)
	}
	if held() {
		t.Error("A's renewal kept in memory a sandbox that names B")
	}
}
