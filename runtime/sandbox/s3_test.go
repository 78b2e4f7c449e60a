package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/objstore/s3test"
	"github.com/subako/subako/runtime/sandbox"
)

// otherReplica is a second Manager on the same records (one database) and
// the same bucket, with its own machines folder: a replica that never saw
// the sandbox.
func (e *env) otherReplica(srv *s3test.Server, prefix string) *sandbox.Manager {
	e.t.Helper()
	base := e.t.TempDir()
	os.Chmod(base, 0o711)
	cfg := e.cfg
	cfg.Dir = filepath.Join(base, "machines")
	cfg.Archives = srv.Store(e.t, prefix)
	m, err := sandbox.NewManager(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func execOn(t *testing.T, m *sandbox.Manager, command string) (sandbox.ExecResult, error) {
	t.Helper()
	return m.Exec(context.Background(), key, sandbox.ExecRequest{Command: command, TimeoutSecs: 30})
}

// TestWorkspaceRestoresFromS3OnAReplicaThatNeverSawIt: a sandbox suspended
// on one replica goes to the bucket, and its next exec on another replica
// (another machines folder, the same records) finds /workspace as it was.
func TestWorkspaceRestoresFromS3OnAReplicaThatNeverSawIt(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, func(c *sandbox.Config) { c.Archives = srv.Store(t, "prod") })
	e.exec("mkdir -p src && echo 'package main' > src/main.go && echo done > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	if rec.ArchiveError != "" || rec.ArchiveBytes == 0 {
		t.Fatalf("suspension: archive error %q, %d bytes; want an archive in the bucket", rec.ArchiveError, rec.ArchiveBytes)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Dir, rec.ID, "workspace")); !os.IsNotExist(err) {
		t.Fatalf("the archived workspace folder is still on the first replica: %v", err)
	}

	b := e.otherReplica(srv, "prod")
	res, err := execOn(t, b, "cat src/main.go notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "package main\ndone\n" {
		t.Fatalf("on the other replica /workspace holds %q (stderr %q), want the suspended files", res.Stdout, res.Stderr)
	}
}

// TestStoreDownKeepsTheWorkspaceAndArchivesItOnceBack: a suspension while
// the store is down keeps /workspace on the replica and says why; an exec
// there still finds its files; another replica's exec says the store is
// down; once the store is back the folder goes to the bucket within a
// minute and restores anywhere.
func TestStoreDownKeepsTheWorkspaceAndArchivesItOnceBack(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, func(c *sandbox.Config) { c.Archives = srv.Store(t, "outage") })
	e.exec("echo before > a.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	first := e.wantState(sandbox.StateSuspended)

	e.exec("echo during > a.txt")
	srv.Stop(t)
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	if !strings.Contains(rec.ArchiveError, srv.URL("outage")) || !strings.Contains(rec.ArchiveError, "is unavailable") ||
		!strings.Contains(rec.ArchiveError, "kept") {
		t.Fatalf("archive error %q: want it to name the store %s, say it is unavailable and that /workspace is kept", rec.ArchiveError, srv.URL("outage"))
	}
	if strings.Contains(rec.ArchiveError, srv.SecretKey) {
		t.Fatalf("the archive error shows the secret key: %q", rec.ArchiveError)
	}
	if !rec.ArchiveAt.Equal(first.ArchiveAt) || rec.ArchiveSHA256 != first.ArchiveSHA256 {
		t.Fatalf("the record lost its previous archive: %v %s, want %v %s", rec.ArchiveAt, rec.ArchiveSHA256, first.ArchiveAt, first.ArchiveSHA256)
	}
	ws := filepath.Join(e.cfg.Dir, rec.ID, "workspace")
	if _, err := os.Stat(ws); err != nil {
		t.Fatalf("the workspace that could not be archived is gone: %v", err)
	}

	// A retry while the store is still down changes nothing; the retirement
	// never drops the folder.
	e.tick(sandbox.StoreRetryEvery)
	e.tick(5 * sandbox.DefaultRetireAfter)
	e.wantState(sandbox.StateSuspended)
	if _, err := os.Stat(ws); err != nil {
		t.Fatalf("the kept workspace went while the store was down: %v", err)
	}

	srv.Restart(t)
	e.tick(sandbox.StoreRetryEvery)
	rec = e.rec() // suspended, or retired at once: its retirement was due, held only for the folder
	if rec.ArchiveError != "" || rec.ArchiveSHA256 == first.ArchiveSHA256 {
		t.Fatalf("once the store is back: archive error %q, sha256 %s (first %s); want a new archive", rec.ArchiveError, rec.ArchiveSHA256, first.ArchiveSHA256)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(ws); err == nil && time.Now().Before(deadline); _, err = os.Stat(ws) {
		time.Sleep(50 * time.Millisecond) // the folder is removed in the background
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("the archived folder is still kept: %v", err)
	}
	b := e.otherReplica(srv, "outage")
	res, err := execOn(t, b, "cat a.txt")
	if err != nil || res.Stdout != "during\n" {
		t.Fatalf("the other replica restored %q, %v; want the work done during the outage", res.Stdout, err)
	}
}
