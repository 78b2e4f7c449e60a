package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// ErrRunning is returned by UploadArchive for a running sandbox: its
// workspace is live, and its next suspension would replace the archive.
var ErrRunning = errors.New("sandbox: an archive can only be uploaded to a suspended or retired sandbox")

// UploadArchive makes body (tar + gzip) a suspended or retired sandbox's
// archive, once it passed a trial restore with the limits of a real one; a
// refused upload changes nothing. It clears archive_error and sets
// archive_note to note. A suspended sandbox's kept folder (from a failed
// archiving) is dropped: the next exec restores the uploaded archive.
func (m *Manager) UploadArchive(ctx context.Context, id string, body io.Reader, note string) (Record, error) {
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
		rec, err := m.uploadLocked(ctx, b, body, note)
		b.mu.Unlock()
		return rec, err
	}
}

func (m *Manager) uploadLocked(ctx context.Context, b *box, body io.Reader, note string) (Record, error) {
	if b.machine != nil || b.rec.State != StateSuspended && b.rec.State != StateRetired {
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
	defer os.RemoveAll(scratch)
	lim := archive.Limits{MaxBytes: m.cfg.MaxArchiveBytes, MaxExpandedBytes: m.cfg.MaxExpandedBytes}
	info, err := archive.Receive(ctx, m.cfg.Archives, b.rec.ID, body, lim, scratch)
	if err != nil {
		return Record{}, err
	}
	now := m.now()
	rec := b.rec
	rec.ArchiveBytes, rec.ArchiveAt, rec.ArchiveSHA256 = info.Bytes, now, info.SHA256
	rec.ArchiveError, rec.ArchiveNote = "", note
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return Record{}, fmt.Errorf("sandbox: record uploaded archive of %s: %w", rec.ID, err)
	}
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
