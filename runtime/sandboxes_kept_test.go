package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// A sandbox suspended on replica a while the archive store was down has its
// newest /workspace only in a's kept folder, and its record says so
// (replica_id a). Another replica never takes it: while a lives the
// request goes to a (Claim answers OwnedError, the exec is forwarded);
// while a is down it is refused with 503 workspace_on_down_replica saying
// where the newest work is; and the record keeps its archive error and
// its replica, so no retirement drops a's folder.
func TestAWorkspaceKeptOnOneReplicaIsNeverTakenByAnother(t *testing.T) {
	db, rts := replicasOnPostgres(t, "rep-a", "rep-b")
	a, b := rts[0], rts[1]
	ctx := context.Background()
	b.SetSandboxPeer(nil)
	now := time.Now().UTC().Truncate(time.Second)
	archived := now.Add(-time.Hour)
	downErr := "the archive store s3://bucket/p is unavailable (put sbx_kept: dial tcp 127.0.0.1:1: connection refused); /workspace is kept on this replica and archived again as soon as the store answers"
	rec := sandbox.Record{ID: "sbx_kept", SessionID: "ses_kept", Grant: "workbench", State: sandbox.StateSuspended,
		StartedAt: now.Add(-2 * time.Hour), SuspendedAt: now, ArchiveAt: archived, ArchiveBytes: 10, ArchiveError: downErr, Owner: "rep-a"}
	// a's suspension records it (the Manager names a as Owner).
	if err := (sandboxStore{db: db, owner: func() string { return "rep-a" }}).Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	row := func() models.Sandbox {
		var m models.Sandbox
		if err := db.First(&m, "id = ?", rec.ID).Error; err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := row(); m.ReplicaID != "rep-a" {
		t.Fatalf("the suspended sandbox whose folder a kept names replica %q, want rep-a", m.ReplicaID)
	}

	// a lives: the exec reaching b is forwarded to a.
	if url, _, err := b.sandboxElsewhere(ctx, row()); err != nil || url != "http://rep-a" {
		t.Fatalf("b sends the exec to %q (%v), want a (http://rep-a), which holds the newest /workspace", url, err)
	}
	_, err := sandboxOwnership{b}.Claim(ctx, rec.ID)
	var owned *sandbox.OwnedError
	if !errors.As(err, &owned) || owned.Replica != "rep-a" {
		t.Fatalf("b's claim while a lives: %v; want it to name rep-a", err)
	}

	// a is down: b says the newest work is on a replica that is down.
	if err := db.Model(&models.Replica{}).Where("id = ?", "rep-a").Update("stopped_at", now).Error; err != nil {
		t.Fatal(err)
	}
	if url, _, err := b.sandboxElsewhere(ctx, row()); err != nil || url != "" {
		t.Fatalf("b forwards to a dead replica: %q %v", url, err)
	}
	_, err = sandboxOwnership{b}.Claim(ctx, rec.ID)
	var re *Error
	if !errors.As(execError(err), &re) || re.Kind != KindUnavailable || re.Code != "workspace_on_down_replica" ||
		!strings.Contains(re.Detail, "kept on replica rep-a, which is down") || !strings.Contains(re.Detail, archived.Format(time.RFC3339)) {
		t.Fatalf("b's claim while a is down: %v; want 503 workspace_on_down_replica naming rep-a and the older archive", execError(err))
	}
	// A start failing on b (the record it read, written back) keeps it a's.
	if err := (sandboxStore{db: db, owner: func() string { return "rep-b" }}).Put(ctx, recordOf(row())); err != nil {
		t.Fatal(err)
	}
	if m := row(); m.ReplicaID != "rep-a" || m.ArchiveError != downErr || m.State != "suspended" {
		t.Fatalf("after b: replica %q, state %s, archive error %q; want it kept on rep-a with its archive error", m.ReplicaID, m.State, m.ArchiveError)
	}

	// a comes back: it claims its own sandbox.
	if _, err := (sandboxOwnership{a}).Claim(ctx, rec.ID); err != nil {
		t.Fatalf("a's claim of the sandbox whose folder it keeps: %v", err)
	}
}
