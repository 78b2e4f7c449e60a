package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// ErrRunning is returned by UploadArchive for a running sandbox: its
// workspace is live, and its next suspension would replace the archive.
var ErrRunning = errors.New("sandbox: an archive can only be uploaded to a suspended or retired sandbox")

// ErrChangedDuringUpload is returned when the sandbox wrote a new archive
// while an upload was being read: the newer archive is kept.
var ErrChangedDuringUpload = errors.New("sandbox: the sandbox ran and wrote a new archive while the upload was read")

// UploadArchive makes body (tar + gzip) a suspended or retired sandbox's
// archive, once it passed a trial restore with the limits of a real one; a
// refused upload changes nothing. It clears archive_error and sets
// archive_note to note. A suspended sandbox's kept folder (from a failed
// archiving) is dropped: the next exec restores the uploaded archive.
//
// The body is read and checked before the sandbox is locked, so a slow
// upload holds up neither the sandbox's execs nor the lifecycle's tick.
func (m *Manager) UploadArchive(ctx context.Context, id string, body io.Reader, note string) (Record, error) {
	before, err := m.cfg.Store.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	if before.State != StateSuspended && before.State != StateRetired {
		return Record{}, ErrRunning
	}
	if err := m.checkFreeDisk("upload an archive"); err != nil {
		return Record{}, err
	}
	if err := os.MkdirAll(m.trashDir(), 0o700); err != nil {
		return Record{}, fmt.Errorf("sandbox: create trash: %w", err)
	}
	// The trial restore goes in the trash, which Recover empties after a crash.
	scratch, err := os.MkdirTemp(m.trashDir(), "upload-")
	if err != nil {
		return Record{}, fmt.Errorf("sandbox: trial restore folder: %w", err)
	}
	lim := archive.Limits{MaxBytes: m.cfg.MaxArchiveBytes, MaxExpandedBytes: m.cfg.MaxExpandedBytes}
	staged, err := archive.Stage(ctx, m.cfg.Archives, id, body, lim, scratch)
	os.RemoveAll(scratch)
	if err != nil {
		return Record{}, err
	}
	defer staged.Discard()
	for {
		stored, err := m.cfg.Store.Get(ctx, id)
		if err != nil {
			return Record{}, err
		}
		b := m.adopt(stored)
		b.mu.Lock()
		if b.gone {
			b.mu.Unlock()
			continue // retired meanwhile: look it up again
		}
		rec, err := m.commitUpload(ctx, b, staged, before, note)
		b.mu.Unlock()
		return rec, err
	}
}

// sameArchive reports whether a and b record the same archive. before comes
// from the store, the box's record from memory: PostgreSQL keeps times to the
// microsecond, so the box's nanoseconds would never match it.
func sameArchive(a, b Record) bool {
	return a.ArchiveSHA256 == b.ArchiveSHA256 && a.ArchiveGen == b.ArchiveGen &&
		a.ArchiveAt.Truncate(time.Microsecond).Equal(b.ArchiveAt.Truncate(time.Microsecond))
}

// commitUpload puts the staged archive in place and records it (b.mu held).
func (m *Manager) commitUpload(ctx context.Context, b *box, staged *archive.Staged, before Record, note string) (Record, error) {
	if b.machine != nil || b.rec.State != StateSuspended && b.rec.State != StateRetired {
		return Record{}, ErrRunning
	}
	if !sameArchive(b.rec, before) {
		return Record{}, ErrChangedDuringUpload
	}
	info, err := staged.Commit(ctx)
	if err != nil {
		return Record{}, err
	}
	now := m.now()
	rec := b.rec
	rec.ArchiveBytes, rec.ArchiveAt, rec.ArchiveSHA256, rec.ArchiveGen = info.Bytes, now, info.SHA256, info.Gen
	rec.ArchiveError, rec.ArchiveNote = "", note
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return Record{}, fmt.Errorf("sandbox: record uploaded archive of %s: %w", rec.ID, err)
	}
	m.dropArchive(ctx, b.rec, rec)
	b.rec = rec
	m.notify(rec)
	m.usage(rec, UsageArchiveBytes, float64(rec.ArchiveBytes), now)
	if rec.State == StateSuspended {
		if err := m.discard(m.workspaceDir(rec.ID), "upload"); err != nil {
			m.cfg.Logger.Warn("sandbox: remove the folder an upload replaced", "sandbox", rec.ID, "err", err)
		}
	}
	return rec, nil
}
