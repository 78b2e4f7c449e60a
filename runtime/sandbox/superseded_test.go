package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// A replica cut off past its lease (slow, paused, partitioned) while
// another took its sandbox over, worked in it and archived that work must
// not, once it wakes, archive its stale machine over the new archive nor
// record the sandbox as its own: the archived work is kept.
func TestSupersededMachineIsNotArchivedOverTheNewOwners(t *testing.T) {
	e := newEnv(t, nil)
	replicas := e.replicas()
	a, b := replicas.start(t, "a"), replicas.start(t, "b")
	ctx := context.Background()
	exec := func(m *sandbox.Manager, cmd string) string {
		t.Helper()
		res, err := m.Exec(ctx, key, sandbox.ExecRequest{Command: cmd, TimeoutSecs: 30})
		if err != nil {
			t.Fatalf("exec %q: %v", cmd, err)
		}
		return res.Stdout
	}
	exec(a, "echo old > notes.txt")
	if rec := e.rec(); rec.Owner != "a" {
		t.Fatalf("owner %q, want a", rec.Owner)
	}
	// a stops answering; b takes the sandbox over, works in it, and
	// archives that work when it idles.
	replicas.down("a", true)
	exec(b, "echo new > notes.txt")
	e.clock.Advance(sandbox.DefaultIdleTimeout + time.Second)
	if err := b.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	rec := e.wantState(sandbox.StateSuspended)
	if got := e.archived(rec.ID)["notes.txt"]; got != "new\n" {
		t.Fatalf("b's archive holds %q, want new", got)
	}
	// a wakes: its machine is idle too.
	if err := a.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	after := e.wantState(sandbox.StateSuspended)
	if got := e.archived(rec.ID)["notes.txt"]; got != "new\n" {
		t.Errorf("after the stale replica's tick the archive holds %q, want b's archived new: the archived work was lost", got)
	}
	if after.ArchiveSHA256 != rec.ArchiveSHA256 || after.ArchiveAt != rec.ArchiveAt {
		t.Errorf("the stale replica recorded an archive of its own: %s at %v, want b's %s at %v", after.ArchiveSHA256, after.ArchiveAt, rec.ArchiveSHA256, rec.ArchiveAt)
	}
	// And the next start, on a, restores b's work, not a's old folder.
	replicas.down("a", false)
	if got := exec(a, "cat notes.txt"); got != "new\n" {
		t.Errorf("a restarted the sandbox with notes.txt %q, want new", got)
	}
}
