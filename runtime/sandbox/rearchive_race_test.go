package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/subako/subako/runtime/objstore/s3test"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// condStore is one replica's view of the shared records as the server's
// sandboxes table keeps them (a running record names its replica, a kept
// folder's record the replica keeping it), with the table's conditional
// write (sandbox.CondStore).
type condStore struct {
	*sandbox.MemStore
	me string
	mu *sync.Mutex
}

func (s condStore) owned(rec sandbox.Record) sandbox.Record {
	rec.Owner = sandbox.KeptOn(rec)
	if rec.State == sandbox.StateRunning {
		rec.Owner = s.me
	}
	return rec
}

func (s condStore) Put(ctx context.Context, rec sandbox.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.MemStore.Put(ctx, s.owned(rec))
}

func (s condStore) PutIf(ctx context.Context, rec, expect sandbox.Record) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.MemStore.Get(ctx, rec.ID)
	if err != nil {
		return false, err
	}
	if cur.State != expect.State || cur.Owner != expect.Owner || cur.ArchiveSHA256 != expect.ArchiveSHA256 || cur.ArchiveGen != expect.ArchiveGen || cur.ArchiveError != expect.ArchiveError {
		return false, nil
	}
	return true, s.MemStore.Put(ctx, s.owned(rec))
}

// condOwner is the Ownership of replica store.me over those records.
type condOwner struct{ store condStore }

func (o condOwner) Replica() string { return o.store.me }

func (o condOwner) Claim(ctx context.Context, id string) (sandbox.Record, error) {
	rec, err := o.store.Get(ctx, id)
	if err != nil {
		return rec, err
	}
	if rec.State == sandbox.StateRunning && rec.Owner != o.store.me {
		return sandbox.Record{}, &sandbox.OwnedError{ID: id, Replica: rec.Owner}
	}
	return rec, nil
}

func (o condOwner) Recoverable(context.Context, sandbox.Record, bool) bool { return true }

func (o condOwner) Holds(ctx context.Context, id string) (bool, error) {
	rec, err := o.store.Get(ctx, id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return true, nil
	}
	return err == nil && rec.State == sandbox.StateRunning && rec.Owner == o.store.me, err
}

// downArchives is an archive store that can be down (as S3 is when it
// does not answer), and runs duringPut while an upload is under way.
type downArchives struct {
	archive.Store
	down      atomic.Bool
	duringPut func(id string)
}

func (d *downArchives) unavailable(op string) error {
	return &archive.UnavailableError{Store: "s3://bucket/kept", Op: op, Err: errors.New("dial tcp 127.0.0.1:1: connection refused")}
}

func (d *downArchives) Put(ctx context.Context, ref archive.Ref, tempPath string) (archive.Info, error) {
	if d.down.Load() {
		os.Remove(tempPath)
		return archive.Info{}, d.unavailable("put " + ref.String())
	}
	if d.duringPut != nil {
		d.duringPut(ref.ID)
	}
	return d.Store.Put(ctx, ref, tempPath)
}

func (d *downArchives) Ping(context.Context) error {
	if d.down.Load() {
		return d.unavailable("ping")
	}
	return nil
}

// TestRetryArchivesNeverOverwritesAnotherReplicasRecord: replica a kept a
// sandbox's folder because the store was down when it suspended it. While
// a archives that folder again once the store answers, another replica
// (b) takes the sandbox over and runs it. a's write of "suspended,
// archived" is conditional on the record it read, so b's record stands,
// and a's folder, no longer the newest /workspace, is set aside rather
// than used or deleted.
func TestRetryArchivesNeverOverwritesAnotherReplicasRecord(t *testing.T) {
	var archives *downArchives
	var store condStore
	e := newEnv(t, func(c *sandbox.Config) {
		archives = &downArchives{Store: c.Archives}
		store = condStore{MemStore: c.Store.(*sandbox.MemStore), me: "a", mu: &sync.Mutex{}}
		c.Archives, c.Store, c.Owner = archives, store, condOwner{store}
	})
	ctx := context.Background()
	tick := func() {
		t.Helper()
		if err := e.mgr.Tick(ctx); err != nil && !strings.Contains(err.Error(), "unavailable") {
			t.Fatal(err)
		}
	}
	e.exec("echo newest > notes.txt")
	archives.down.Store(true)
	e.clock.Advance(sandbox.DefaultIdleTimeout + 1)
	tick()
	kept := e.wantState(sandbox.StateSuspended)
	ws := filepath.Join(e.cfg.Dir, kept.ID, "workspace")
	if kept.ArchiveError == "" || kept.Owner != "a" {
		t.Fatalf("suspended with the store down: archive error %q, kept on %q; want an error and replica a", kept.ArchiveError, kept.Owner)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes.txt")); err != nil {
		t.Fatalf("a's kept folder: %v", err)
	}

	// The store answers; while a uploads the folder, b takes the sandbox
	// over (its record: running on b).
	archives.down.Store(false)
	archives.duringPut = func(id string) {
		took := kept
		took.State, took.Owner, took.ArchiveError = sandbox.StateRunning, "b", ""
		if err := store.MemStore.Put(ctx, took); err != nil {
			t.Error(err)
		}
	}
	e.clock.Advance(sandbox.StoreRetryEvery + 1)
	tick()
	rec := e.rec()
	if rec.State != sandbox.StateRunning || rec.Owner != "b" {
		t.Fatalf("after a's retry: %s on %q (archive error %q); want b's record, running on b, as b wrote it", rec.State, rec.Owner, rec.ArchiveError)
	}
	if b, err := os.ReadFile(filepath.Join(ws+".superseded", "notes.txt")); err != nil || string(b) != "newest\n" {
		t.Fatalf("a's kept folder was not set aside: %q %v", b, err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("a's kept folder is still its workspace: %v", err)
	}
	// a's later ticks leave it alone.
	e.clock.Advance(sandbox.StoreRetryEvery + 1)
	tick()
	if rec := e.rec(); rec.State != sandbox.StateRunning || rec.Owner != "b" {
		t.Fatalf("after a's next tick: %s on %q", rec.State, rec.Owner)
	}
}

// TestLateRearchiveNeverReplacesAnotherReplicasArchive: replica a kept a
// sandbox's folder because the store was down. Once the store answers, a
// checks the record and uploads the folder; during that upload replica b
// takes the sandbox over, runs it and suspends it, recording its newer
// archive. a's upload ends after b's, and a's conditional write of the
// record is refused. b's archive must still be the one the record names,
// byte for byte (a's upload never replaced it), and b's next start must
// restore b's work. On the local store and on S3 (SeaweedFS).
func TestLateRearchiveNeverReplacesAnotherReplicasArchive(t *testing.T) {
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) { testLateRearchive(t, kind) })
	}
}

func testLateRearchive(t *testing.T, kind string) {
	var archives *downArchives
	var shared archive.Store
	var a condStore
	e := newEnv(t, func(c *sandbox.Config) {
		shared = c.Archives
		if kind == "s3" {
			shared = s3test.Start(t).Store(t, "race")
		}
		archives = &downArchives{Store: shared}
		a = condStore{MemStore: c.Store.(*sandbox.MemStore), me: "a", mu: &sync.Mutex{}}
		c.Archives, c.Store, c.Owner = archives, a, condOwner{a}
	})
	// Replica b: the same records and archive store, its own machines.
	bs := condStore{MemStore: a.MemStore, me: "b", mu: a.mu}
	bcfg := e.cfg
	bcfg.Store, bcfg.Owner, bcfg.Archives = bs, condOwner{bs}, shared
	bcfg.Dir = filepath.Join(filepath.Dir(e.cfg.Dir), "machines-b")
	b, err := sandbox.NewManager(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	ctx := context.Background()
	tick := func() {
		t.Helper()
		if err := e.mgr.Tick(ctx); err != nil && !strings.Contains(err.Error(), "unavailable") {
			t.Fatal(err)
		}
	}
	e.exec("echo older, kept on a > notes.txt")
	archives.down.Store(true)
	e.clock.Advance(sandbox.DefaultIdleTimeout + 1)
	tick()
	kept := e.wantState(sandbox.StateSuspended)
	if kept.ArchiveError == "" || kept.Owner != "a" {
		t.Fatalf("suspended with the store down: archive error %q, kept on %q; want an error and replica a", kept.ArchiveError, kept.Owner)
	}

	archives.down.Store(false)
	var newest sandbox.Record
	var newestBytes []byte
	archives.duringPut = func(string) {
		archives.duringPut = nil
		if res, err := execOn(t, b, "echo newest, from b > notes.txt"); err != nil || res.ExitCode != 0 {
			t.Fatalf("b's exec: %+v, %v", res, err)
		}
		if err := b.Close(ctx); err != nil {
			t.Fatalf("b's suspension: %v", err)
		}
		newest = e.rec()
		if newest.State != sandbox.StateSuspended || newest.ArchiveError != "" || newest.ArchiveSHA256 == "" {
			t.Fatalf("b's suspension recorded %s, archive error %q, sha256 %q; want an archive", newest.State, newest.ArchiveError, newest.ArchiveSHA256)
		}
		newestBytes = readArchive(t, shared, newest)
	}
	e.clock.Advance(sandbox.StoreRetryEvery + 1)
	tick()
	if newestBytes == nil {
		t.Fatal("a never uploaded its kept folder")
	}
	rec := e.rec()
	if rec.ArchiveSHA256 != newest.ArchiveSHA256 || rec.ArchiveGen != newest.ArchiveGen || rec.ArchiveError != "" {
		t.Fatalf("after a's late upload the record names sha256 %s (generation %q, archive error %q); want b's %s (%q)",
			rec.ArchiveSHA256, rec.ArchiveGen, rec.ArchiveError, newest.ArchiveSHA256, newest.ArchiveGen)
	}
	got := readArchive(t, shared, rec)
	if sum := sha256.Sum256(got); !bytes.Equal(got, newestBytes) || hex.EncodeToString(sum[:]) != rec.ArchiveSHA256 {
		t.Fatalf("the archive the record names is not b's: %d bytes, sha256 %x; want b's %d bytes, %s",
			len(got), sum, len(newestBytes), rec.ArchiveSHA256)
	}
	if res, err := execOn(t, b, "cat notes.txt"); err != nil || res.Stdout != "newest, from b\n" {
		t.Fatalf("b's next start restored %q, %v; want b's work", res.Stdout, err)
	}
	// a's upload, which no record names, is not left in the store.
	if all, err := shared.List(ctx, rec.ID); err != nil || len(all) != 1 || all[0].Gen != newest.ArchiveGen {
		t.Errorf("archives of %s in the store: %+v, %v; want only b's (generation %s)", rec.ID, all, err, newest.ArchiveGen)
	}
}

// readArchive reads the archive rec names, whole.
func readArchive(t *testing.T, store archive.Store, rec sandbox.Record) []byte {
	t.Helper()
	rc, _, err := store.Open(context.Background(), rec.ArchiveRef())
	if err != nil {
		t.Fatalf("open the archive of %s: %v", rec.ID, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read the archive of %s: %v", rec.ID, err)
	}
	return b
}
