package sandbox_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// takeoverStore is condStore where, once armed, another replica takes the
// sandbox over just before this replica's next write lands: after any
// ownership check this replica made, before its write.
type takeoverStore struct {
	condStore
	armed *atomic.Bool
	to    string
}

func (s takeoverStore) takeover(ctx context.Context, id string) {
	if !s.armed.CompareAndSwap(true, false) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, _ := s.MemStore.Get(ctx, id)
	rec.Owner = s.to
	s.MemStore.Put(ctx, rec)
}

func (s takeoverStore) Put(ctx context.Context, rec sandbox.Record) error {
	s.takeover(ctx, rec.ID)
	return s.condStore.Put(ctx, rec)
}

func (s takeoverStore) PutIf(ctx context.Context, rec, expect sandbox.Record) (bool, error) {
	s.takeover(ctx, rec.ID)
	return s.condStore.PutIf(ctx, rec, expect)
}

// newTakeoverEnv is an env whose manager is replica a over a takeoverStore
// that hands the sandbox to replica b.
func newTakeoverEnv(t *testing.T) (*env, takeoverStore) {
	var store takeoverStore
	e := newEnv(t, func(c *sandbox.Config) {
		store = takeoverStore{condStore: condStore{MemStore: c.Store.(*sandbox.MemStore), me: "a", mu: &sync.Mutex{}},
			armed: &atomic.Bool{}, to: "b"}
		c.Store, c.Owner = store, condOwner{store.condStore}
	})
	return e, store
}

// TestActivityFlushNeverOverwritesATakeover: replica a records a running
// sandbox's last activity at a Tick. Another replica (b) takes the
// sandbox over after a's ownership check and before its write; the record
// must still name b afterwards, not point back at a (with a fresh lease)
// while b runs the sandbox. (Failed with flushActivity's Holds followed by
// an unconditional Put: owner a.)
func TestActivityFlushNeverOverwritesATakeover(t *testing.T) {
	e, store := newTakeoverEnv(t)
	e.exec("true")
	if got := e.rec().Owner; got != "a" {
		t.Fatalf("owner after the first exec = %q, want a", got)
	}
	e.clock.Advance(time.Second)
	e.exec("true") // moves the last activity past the recorded one
	store.armed.Store(true)
	e.tick(time.Second)
	if store.armed.Load() {
		t.Fatal("the Tick wrote no record: the test no longer reaches the activity flush")
	}
	rec := e.rec()
	if rec.Owner != "b" || rec.State != sandbox.StateRunning {
		t.Fatalf("after the takeover and a's Tick: owner %q, state %s; want b, running", rec.Owner, rec.State)
	}
}

// TestSuspensionNeverOverwritesATakeover: replica a suspends an idle
// sandbox; another replica (b) takes it over after a's ownership check,
// while a archives. a's record of the suspension must not land over b's
// running record (it did: state suspended, owner "", while b ran the
// sandbox), its upload is deleted and its folder set aside.
func TestSuspensionNeverOverwritesATakeover(t *testing.T) {
	e, store := newTakeoverEnv(t)
	e.exec("echo a > notes.txt")
	before := e.rec()
	store.armed.Store(true)
	e.tick(sandbox.DefaultIdleTimeout + time.Second)
	if store.armed.Load() {
		t.Fatal("the Tick wrote no record: the test no longer reaches the suspension")
	}
	rec := e.rec()
	if rec.Owner != "b" || rec.State != sandbox.StateRunning || rec.ArchiveGen != before.ArchiveGen {
		t.Fatalf("after the takeover and a's suspension: owner %q, state %s, generation %q; want b, running, %q",
			rec.Owner, rec.State, rec.ArchiveGen, before.ArchiveGen)
	}
	all, err := e.archives.List(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if a.Ref() != rec.ArchiveRef() {
			t.Errorf("archive %s left in the store, no record names it", a.Ref())
		}
	}
}
