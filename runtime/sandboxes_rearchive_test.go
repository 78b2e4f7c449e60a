package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// The sandboxes table's conditional write (sandbox.CondStore), which a
// replica archiving a folder it kept writes through: it replaces the
// record while it is as that replica read it, and never once another
// replica took the sandbox over meanwhile.
func TestKeptArchiveWriteIsConditionalOnTheRecordAsRead(t *testing.T) {
	db, rts := replicasOnPostgres(t, "rep-a", "rep-b")
	a := rts[0]
	ctx := context.Background()
	storeA := sandboxStore{db: db, owner: func() string { return "rep-a" }, clock: a.dbNow}
	now := time.Now().UTC().Truncate(time.Second)
	downErr := "the archive store s3://bucket/p is unavailable (put sbx_x: dial tcp 127.0.0.1:1: connection refused); /workspace is kept on this replica and archived again as soon as the store answers"
	kept := sandbox.Record{ID: "sbx_kept", SessionID: "ses_kept", Grant: "workbench", State: sandbox.StateSuspended,
		StartedAt: now.Add(-time.Hour), SuspendedAt: now, ArchiveError: downErr, Owner: "rep-a"}
	if err := storeA.Put(ctx, kept); err != nil {
		t.Fatal(err)
	}
	archived := kept
	archived.ArchiveError, archived.ArchiveAt, archived.ArchiveBytes, archived.ArchiveSHA256 = "", now, 42, "abc"
	archived.ArchiveGen = "0f1e2d"

	// Unchanged: a's write goes through, and the record names nobody.
	if ok, err := storeA.PutIf(ctx, archived, kept); err != nil || !ok {
		t.Fatalf("a's write over the record it read: %v %v", ok, err)
	}
	var m models.Sandbox
	db.First(&m, "id = ?", kept.ID)
	if m.ArchiveSHA256 != "abc" || m.ArchiveGen != "0f1e2d" || m.ReplicaID != "" || m.ArchiveError != "" {
		t.Fatalf("after a's write: sha %q, generation %q, replica %q, error %q", m.ArchiveSHA256, m.ArchiveGen, m.ReplicaID, m.ArchiveError)
	}
	// A write expecting another generation of the same archive changes
	// nothing.
	other := archived
	other.ArchiveGen, other.Owner = "99aa", ""
	if ok, err := storeA.PutIf(ctx, kept, other); err != nil || ok {
		t.Fatalf("a write expecting generation %s over %s went through: %v %v", other.ArchiveGen, archived.ArchiveGen, ok, err)
	}

	// Kept again; b takes it over (as its Claim and start do) before a
	// writes: a's write changes nothing.
	if err := storeA.Put(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if err := db.Model(&models.Sandbox{}).Where("id = ?", kept.ID).
		Updates(map[string]any{"state": "running", "replica_id": "rep-b", "archive_error": "", "lease_expires_at": now.Add(time.Minute)}).Error; err != nil {
		t.Fatal(err)
	}
	if ok, err := storeA.PutIf(ctx, archived, kept); err != nil || ok {
		t.Fatalf("a's write over b's takeover went through: %v %v", ok, err)
	}
	db.First(&m, "id = ?", kept.ID)
	if m.State != "running" || m.ReplicaID != "rep-b" || m.ArchiveSHA256 != "" {
		t.Fatalf("b's record after a's write: %s on %q, sha %q", m.State, m.ReplicaID, m.ArchiveSHA256)
	}
}
