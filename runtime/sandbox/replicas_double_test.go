package sandbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// replicaStore is one replica's view of the shared records as the server's
// sandboxes table keeps them: a running record names its replica, and a
// suspended one whose folder was kept for a store that was down names the
// replica keeping it (sandbox.KeptOn).
type replicaStore struct {
	*sandbox.MemStore
	me string
}

func (s replicaStore) Put(ctx context.Context, rec sandbox.Record) error {
	rec.Owner = sandbox.KeptOn(rec)
	if rec.State == sandbox.StateRunning {
		rec.Owner = s.me
	}
	return s.MemStore.Put(ctx, rec)
}

// replicaOwnership claims as the server's Claim does: a live owner keeps a
// running sandbox (OwnedError: forwarded to it); a sandbox kept on a live
// replica is that replica's, one kept on a dead replica is refused
// (KeptError), never taken; otherwise the claimer records itself the owner.
type replicaOwnership struct {
	store replicaStore
	set   *replicaSet
}

func (o replicaOwnership) Replica() string { return o.store.me }

func (o replicaOwnership) Claim(ctx context.Context, id string) (sandbox.Record, error) {
	o.set.mu.Lock()
	defer o.set.mu.Unlock()
	rec, err := o.store.Get(ctx, id)
	if err != nil {
		return rec, err
	}
	if kept := sandbox.KeptOn(rec); kept != "" && kept != o.store.me {
		if o.set.dead[kept] {
			return sandbox.Record{}, &sandbox.KeptError{ID: id, Replica: kept, SuspendedAt: rec.SuspendedAt, ArchiveAt: rec.ArchiveAt}
		}
		return sandbox.Record{}, &sandbox.OwnedError{ID: id, Replica: kept}
	}
	if rec.Owner != "" && rec.Owner != o.store.me && !o.set.dead[rec.Owner] && rec.State == sandbox.StateRunning {
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

// replicaSet is several managers over one env's records, each a replica
// with its own machines folder, and which of them are down.
type replicaSet struct {
	e    *env
	mu   sync.Mutex
	dead map[string]bool
	// archives, when set, is each replica's archive store.
	archives archive.Store
}

func (e *env) replicas() *replicaSet {
	e.mgr.Close(context.Background())
	return &replicaSet{e: e, dead: map[string]bool{}}
}

// start is replica name's manager, closed when the test ends.
func (s *replicaSet) start(t *testing.T, name string) *sandbox.Manager {
	cfg := s.e.cfg
	st := replicaStore{MemStore: s.e.store, me: name}
	cfg.Store, cfg.Owner = st, replicaOwnership{store: st, set: s}
	if s.archives != nil {
		cfg.Archives = s.archives
	}
	cfg.Dir = filepath.Join(filepath.Dir(s.e.cfg.Dir), "machines-"+name)
	m, err := sandbox.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// down marks replica name down or up again.
func (s *replicaSet) down(name string, down bool) {
	s.mu.Lock()
	s.dead[name] = down
	s.mu.Unlock()
}
