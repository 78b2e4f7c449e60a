package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// archiveOf packs a host folder holding name → content.
func archiveOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := archive.Create(context.Background(), dir, &buf, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An upload is checked against the archive limit and a trial restore's
// limits; a refused one leaves the archive, the record and the kept folder.
func TestUploadRefusedChangesNothing(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.MaxArchiveBytes = 64 << 10; c.MaxExpandedBytes = 1 << 20 })
	e.exec("echo v1 > notes.txt")
	if _, err := e.mgr.UploadArchive(context.Background(), e.rec().ID, bytes.NewReader(archiveOf(t, map[string]string{"x": "y"})), "n"); !errors.Is(err, sandbox.ErrRunning) {
		t.Fatalf("upload to a running sandbox: %v, want ErrRunning", err)
	}
	e.tick(sandbox.DefaultIdleTimeout)
	before := e.wantState(sandbox.StateSuspended)
	noise := make([]byte, 128<<10)
	for i := range noise {
		noise[i] = byte(i * 7919 >> 3)
	}
	tests := []struct {
		name string
		body []byte
		want any
	}{
		{"over the compressed limit", bytes.Repeat([]byte{0x1f}, 80<<10), new(*archive.TooLargeError)},
		{"over the expanded limit", archiveOf(t, map[string]string{"zeros": strings.Repeat("\x00", 2<<20)}), new(*archive.InvalidError)},
		{"not an archive", []byte("hello"), new(*archive.InvalidError)},
	}
	for _, tc := range tests {
		_, err := e.mgr.UploadArchive(context.Background(), before.ID, bytes.NewReader(tc.body), "uploaded")
		if err == nil || !errors.As(err, tc.want) {
			t.Errorf("%s: %v, want %T", tc.name, err, tc.want)
		}
	}
	if after := e.rec(); after != before {
		t.Errorf("a refused upload changed the record:\n%+v\n%+v", after, before)
	}
	if e.archived(before.ID)["notes.txt"] != "v1\n" {
		t.Error("a refused upload replaced the archive")
	}
	if entries, _ := os.ReadDir(filepath.Join(e.cfg.Dir, ".trash")); len(entries) != 0 {
		t.Errorf("trial restores left behind: %v", entries)
	}
}

// Under --min-free-disk no archive is written: the suspension is recorded
// with archive_error naming the floor, the folder is kept for the next exec,
// and an upload is refused.
func TestNoArchiveUnderTheDiskFloor(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo v1 > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	e.exec("echo v2 > notes.txt")
	// The disk fills while the sandbox runs; the server restarts (its
	// machines died with it) with the floor now above the free space.
	for _, m := range e.driver.machines {
		m.Stop()
	}
	e.cfg.MinFreeDisk = 1 << 62
	e.mgr = e.manager()
	if err := e.mgr.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := e.wantState(sandbox.StateSuspended)
	if !strings.Contains(rec.ArchiveError, "--min-free-disk") || e.archived(rec.ID)["notes.txt"] != "v1\n" {
		t.Fatalf("archive_error = %q, archive notes %q; want the floor named and the older archive kept", rec.ArchiveError, e.archived(rec.ID)["notes.txt"])
	}
	var full *sandbox.DiskFullError
	if _, err := e.mgr.UploadArchive(context.Background(), rec.ID, bytes.NewReader(archiveOf(t, map[string]string{"x": "y"})), "n"); !errors.As(err, &full) {
		t.Fatalf("upload under the floor: %v, want a DiskFullError", err)
	}
	e.cfg.MinFreeDisk = 0
	e.mgr = e.manager()
	if res := e.exec("cat notes.txt"); res.Stdout != "v2\n" {
		t.Errorf("once there is room: %q, want the kept folder", res.Stdout)
	}
}

// At a restart, a suspended sandbox's leftover folder gives way to its
// archive only when the archive is the one recorded; else the folder is
// kept and archive_error says why.
func TestRecoverKeepsTheFolderWhenTheArchiveIsNotTheRecordedOne(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo precious > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	// As if the server had died between recording the suspension and
	// removing the folder, and the archive had then been damaged.
	ws := filepath.Join(e.cfg.Dir, rec.ID, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("precious\n"), 0o644)
	f, _ := e.archives.TempFile(rec.ID)
	f.Write(archiveOf(t, map[string]string{"notes.txt": "damaged\n"}))
	f.Close()
	if _, err := e.archives.Put(context.Background(), rec.ArchiveRef(), f.Name()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	e.mgr = e.manager()
	if err := e.mgr.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec := e.rec(); !strings.Contains(rec.ArchiveError, "not the one recorded") {
		t.Errorf("archive_error = %q", rec.ArchiveError)
	}
	if res := e.exec("cat notes.txt"); res.Stdout != "precious\n" {
		t.Errorf("after recovery: %q, want the kept folder", res.Stdout)
	}
}

// An upload is read before the sandbox is locked: an exec (and the
// lifecycle's tick) goes on while a slow client sends it, and an archive
// the sandbox wrote meanwhile is not replaced by the older upload.
func TestSlowUploadHoldsUpNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo v1 > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	id := e.rec().ID
	upload := archiveOf(t, map[string]string{"notes.txt": "uploaded\n"})
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := e.mgr.UploadArchive(context.Background(), id, pr, "uploaded")
		done <- err
	}()
	pw.Write(upload[:10]) // returns once the upload is reading
	if res := e.exec("cat notes.txt; echo v2 > notes.txt"); res.Stdout != "v1\n" {
		t.Fatalf("exec during the upload: %+v", res)
	}
	e.tick(sandbox.DefaultIdleTimeout)
	pw.Write(upload[10:])
	pw.Close()
	if err := <-done; !errors.Is(err, sandbox.ErrChangedDuringUpload) {
		t.Fatalf("upload = %v, want ErrChangedDuringUpload", err)
	}
	if got := e.archived(id)["notes.txt"]; got != "v2\n" {
		t.Errorf("archive holds %q, want the sandbox's newer v2", got)
	}
}
