package sandbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// replicaStore is one replica's view of a shared record store, as the
// server's sandboxes table: a running record names the replica that wrote
// it. replicaOwnership claims as the server does (a live owner keeps it).
type replicaStore struct {
	*sandbox.MemStore
	me string
}

func (s replicaStore) Put(ctx context.Context, rec sandbox.Record) error {
	rec.Owner = ""
	if rec.State == sandbox.StateRunning {
		rec.Owner = s.me
	}
	return s.MemStore.Put(ctx, rec)
}

type replicaOwnership struct {
	store replicaStore
	mu    *sync.Mutex
	dead  map[string]bool
}

func (o replicaOwnership) Claim(ctx context.Context, id string) (sandbox.Record, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rec, err := o.store.Get(ctx, id)
	if err != nil {
		return rec, err
	}
	if rec.Owner != "" && rec.Owner != o.store.me && !o.dead[rec.Owner] && rec.State == sandbox.StateRunning {
		return rec, &sandbox.OwnedError{ID: id, Replica: rec.Owner}
	}
	rec.Owner = o.store.me
	return rec, o.store.MemStore.Put(ctx, rec)
}

func (o replicaOwnership) Recoverable(context.Context, sandbox.Record, bool) bool { return true }

func (o replicaOwnership) Holds(ctx context.Context, id string) (bool, error) {
	rec, err := o.store.Get(ctx, id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return false, nil
	}
	return err == nil && rec.State == sandbox.StateRunning && rec.Owner == o.store.me, err
}

// A replica cut off past its lease (slow, paused, partitioned) while
// another took its sandbox over, worked in it and archived that work must
// not, once it wakes, archive its stale machine over the new archive nor
// record the sandbox as its own: the archived work is kept.
func TestSupersededMachineIsNotArchivedOverTheNewOwners(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.Close(context.Background())
	var mu sync.Mutex
	dead := map[string]bool{}
	replica := func(name string) *sandbox.Manager {
		cfg := e.cfg
		st := replicaStore{MemStore: e.store, me: name}
		cfg.Store, cfg.Owner = st, replicaOwnership{store: st, mu: &mu, dead: dead}
		cfg.Dir = filepath.Join(filepath.Dir(e.cfg.Dir), "machines-"+name)
		m, err := sandbox.NewManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(context.Background()) })
		return m
	}
	a, b := replica("a"), replica("b")
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
	mu.Lock()
	dead["a"] = true
	mu.Unlock()
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
	mu.Lock()
	dead["a"] = false
	mu.Unlock()
	if got := exec(a, "cat notes.txt"); got != "new\n" {
		t.Errorf("a restarted the sandbox with notes.txt %q, want new", got)
	}
}
