package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/objstore/s3test"
	"github.com/subako/subako/runtime/sandbox"
)

// TestKeptWorkspaceIsNeverLostToAnotherReplica: the store is down when
// replica a suspends a sandbox, so its newest /workspace is a folder kept
// on a. An exec reaching replica b neither restores the older archive nor
// clears the record's archive error: while a lives it is a's to run (b is
// told so, to forward), while a is down b says the newest work is on a
// replica that is down. b's retirement ticks leave it alone, and once the
// store answers a archives the folder and b restores the newest work.
func TestKeptWorkspaceIsNeverLostToAnotherReplica(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, nil)
	replicas := e.replicas()
	replicas.archives = srv.Store(t, "kept")
	a, b := replicas.start(t, "a"), replicas.start(t, "b")
	ctx := context.Background()
	tick := func(m *sandbox.Manager) {
		t.Helper()
		if err := m.Tick(ctx); err != nil && !strings.Contains(err.Error(), "unavailable") {
			t.Fatal(err)
		}
	}
	if res, err := execOn(t, a, "echo archived > notes.txt"); err != nil {
		t.Fatal(err, res)
	}
	e.clock.Advance(sandbox.DefaultIdleTimeout + 1)
	tick(a)
	first := e.wantState(sandbox.StateSuspended)
	if first.ArchiveError != "" {
		t.Fatalf("first suspension: %s", first.ArchiveError)
	}
	if _, err := execOn(t, a, "echo newest > notes.txt"); err != nil {
		t.Fatal(err)
	}
	srv.Stop(t)
	e.clock.Advance(sandbox.DefaultIdleTimeout + 1)
	tick(a)
	kept := e.wantState(sandbox.StateSuspended)
	ws := filepath.Join(filepath.Dir(e.cfg.Dir), "machines-a", kept.ID, "workspace")
	if kept.ArchiveError == "" || kept.Owner != "a" {
		t.Fatalf("suspended with the store down: archive error %q, kept on %q; want an error and replica a", kept.ArchiveError, kept.Owner)
	}

	// a lives: b is told a holds it (the server forwards the exec there).
	_, err := execOn(t, b, "cat notes.txt")
	var owned *sandbox.OwnedError
	if !errors.As(err, &owned) || owned.Replica != "a" {
		t.Fatalf("an exec on b while a keeps the newest folder: %v; want it to name replica a", err)
	}
	// a is down: b says where the newest work is, restores nothing.
	replicas.down("a", true)
	res, err := execOn(t, b, "cat notes.txt")
	var keptErr *sandbox.KeptError
	if !errors.As(err, &keptErr) || !strings.Contains(err.Error(), "replica a, which is down") {
		t.Fatalf("an exec on b while a (keeping the newest folder) is down: %+v, %v; want it refused saying the newest work is on a", res, err)
	}
	// b's ticks, retirement long due, leave it and its marker alone.
	e.clock.Advance(5 * sandbox.DefaultRetireAfter)
	tick(b)
	if rec := e.wantState(sandbox.StateSuspended); rec.ArchiveError != kept.ArchiveError || rec.Owner != "a" {
		t.Fatalf("after b's exec and ticks: archive error %q, kept on %q; want them as a recorded them", rec.ArchiveError, rec.Owner)
	}
	if _, err := os.Stat(ws); err != nil {
		t.Fatalf("a's kept folder is gone: %v", err)
	}

	// The store answers again: a archives the folder, b restores it.
	replicas.down("a", false)
	srv.Restart(t)
	tick(a)
	if rec := e.rec(); rec.ArchiveError != "" {
		t.Fatalf("once the store is back: archive error %q", rec.ArchiveError)
	}
	if res, err := execOn(t, b, "cat notes.txt"); err != nil || res.Stdout != "newest\n" {
		t.Fatalf("b restored %q, %v; want the newest work", res.Stdout, err)
	}
}
