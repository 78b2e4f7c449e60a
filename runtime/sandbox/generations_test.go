package sandbox_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// TestArchiveFromBeforeGenerationsIsKeptAtTheUpgrade: a sandbox suspended
// by a Subako that kept one archive per sandbox (<id>.tar.gz, a record
// without a generation) lists its files, downloads and restores from that
// archive after the upgrade. Its next suspension writes a generation, and
// only once the record names it is the old archive deleted.
func TestArchiveFromBeforeGenerationsIsKeptAtTheUpgrade(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.exec("echo from before the upgrade > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	// As the old Subako left it: <id>.tar.gz, and a record naming no
	// generation.
	dir := filepath.Join(filepath.Dir(e.cfg.Dir), "archives")
	if err := os.Rename(filepath.Join(dir, archive.FileName(rec.ArchiveRef())), filepath.Join(dir, rec.ID+".tar.gz")); err != nil {
		t.Fatal(err)
	}
	rec.ArchiveGen = ""
	if err := e.store.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	e.mgr.Close(ctx)
	e.mgr = e.manager()

	if files := e.archived(rec.ID); files["notes.txt"] != "from before the upgrade\n" {
		t.Fatalf("the old archive holds %v", files)
	}
	ls, err := e.mgr.ListFiles(ctx, rec.ID, "")
	if err != nil || ls.Source != sandbox.FilesFromArchive || len(ls.Entries) != 1 || ls.Entries[0].Name != "notes.txt" {
		t.Fatalf("files of the old archive: %+v, %v", ls, err)
	}
	rc, info, err := e.mgr.OpenArchive(ctx, rec.ID)
	if err != nil {
		t.Fatalf("download of the old archive: %v", err)
	}
	n, _ := io.Copy(io.Discard, rc)
	rc.Close()
	if n != rec.ArchiveBytes || info.Bytes != rec.ArchiveBytes {
		t.Fatalf("downloaded %d bytes (info %d), want the %d recorded", n, info.Bytes, rec.ArchiveBytes)
	}
	if res := e.exec("cat notes.txt && echo after the upgrade >> notes.txt"); res.Stdout != "from before the upgrade\n" {
		t.Fatalf("restored %q, want the old archive's notes", res.Stdout)
	}
	e.tick(sandbox.DefaultIdleTimeout)
	after := e.wantState(sandbox.StateSuspended)
	if after.ArchiveGen == "" || after.ArchiveError != "" {
		t.Fatalf("the suspension after the upgrade: generation %q, archive error %q", after.ArchiveGen, after.ArchiveError)
	}
	if files := e.archived(rec.ID); files["notes.txt"] != "from before the upgrade\nafter the upgrade\n" {
		t.Fatalf("the new archive holds %v", files)
	}
	all, err := e.archives.List(ctx, rec.ID)
	if err != nil || len(all) != 1 || all[0].Gen != after.ArchiveGen {
		t.Fatalf("archives of %s: %+v, %v; want only the recorded generation %s", rec.ID, all, err, after.ArchiveGen)
	}
}

// TestDeleteArchiveDeletesEveryGeneration: deleting a retired sandbox's
// archive deletes every archive of it in the store, an unrecorded one (a
// crash between an upload and its record leaves one) and one from before
// generations too; the next exec starts with an empty /workspace.
func TestDeleteArchiveDeletesEveryGeneration(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.exec("echo gone soon > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	for _, gen := range []string{archive.NewGen(), ""} {
		f, err := e.archives.TempFile(rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(archiveOf(t, map[string]string{"notes.txt": "unrecorded\n"}))
		f.Close()
		if _, err := e.archives.Put(ctx, archive.Ref{ID: rec.ID, Gen: gen}, f.Name()); err != nil {
			t.Fatal(err)
		}
	}
	e.tick(sandbox.DefaultRetireAfter)
	e.wantState(sandbox.StateRetired)
	if files := e.archived(rec.ID); files["notes.txt"] != "gone soon\n" {
		t.Fatalf("the retired sandbox's archive holds %v, want the recorded one", files)
	}
	if err := e.mgr.DeleteArchive(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if all, err := e.archives.List(ctx, rec.ID); err != nil || len(all) != 0 {
		t.Fatalf("after DeleteArchive: %+v, %v; want no archive of %s", all, err, rec.ID)
	}
	if res := e.exec("ls -A | wc -l"); res.Stdout != "0\n" {
		t.Fatalf("after DeleteArchive /workspace holds %q entries, want none", res.Stdout)
	}
}

// TestRetirementSweepsUnrecordedArchives: an archive of a sandbox that no
// record names and that is older than its last suspension (a crash
// between an upload and its record) is deleted when the sandbox retires;
// the recorded archive stays, and so does one written after the
// suspension (an upload under way elsewhere, its writer's to record).
func TestRetirementSweepsUnrecordedArchives(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.exec("echo recorded > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	dir := filepath.Join(filepath.Dir(e.cfg.Dir), "archives")
	put := func(when time.Time) archive.Ref {
		ref := archive.Ref{ID: rec.ID, Gen: archive.NewGen()}
		f, err := e.archives.TempFile(rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(archiveOf(t, map[string]string{"notes.txt": "unrecorded\n"}))
		f.Close()
		if _, err := e.archives.Put(ctx, ref, f.Name()); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, archive.FileName(ref)), when, when); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	crashed := put(rec.SuspendedAt.Add(-time.Minute))
	underWay := put(rec.SuspendedAt.Add(sandbox.DefaultRetireAfter))
	e.tick(sandbox.DefaultRetireAfter)
	e.wantState(sandbox.StateRetired)
	left := map[archive.Ref]bool{}
	all, err := e.archives.List(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		left[a.Ref()] = true
	}
	if len(all) != 2 || !left[rec.ArchiveRef()] || !left[underWay] || left[crashed] {
		t.Fatalf("after retirement: %+v; want the recorded archive %s and the one under way %s, not %s", all, rec.ArchiveGen, underWay.Gen, crashed.Gen)
	}
	if files := e.archived(rec.ID); files["notes.txt"] != "recorded\n" {
		t.Fatalf("the retired sandbox's archive holds %v", files)
	}
}
