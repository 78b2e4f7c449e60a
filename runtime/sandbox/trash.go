package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// failpoint is called at each step of suspend, restore and retire. Tests set
// it to kill the process at that step, to prove a crash anywhere loses
// nothing; in production it does nothing.
var failpoint = func(step string) {}

// trashDir holds folders being deleted. A folder is renamed into it in one
// step, then removed, so a crash mid-deletion never leaves a half-deleted
// workspace where a whole one is expected. Sandbox ids hold no dot, so the
// name cannot clash with a sandbox's folder.
func (m *Manager) trashDir() string { return filepath.Join(m.cfg.Dir, ".trash") }

// discard moves p into the trash and deletes it; a missing p is no error.
func (m *Manager) discard(p, step string) error {
	if err := os.MkdirAll(m.trashDir(), 0o700); err != nil {
		return fmt.Errorf("sandbox: create trash: %w", err)
	}
	bin, err := os.MkdirTemp(m.trashDir(), filepath.Base(p)+"-")
	if err != nil {
		return fmt.Errorf("sandbox: trash for %s: %w", p, err)
	}
	if err := os.Rename(p, filepath.Join(bin, "x")); err != nil {
		os.Remove(bin)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("sandbox: move %s to the trash: %w", p, err)
	}
	failpoint(step + ".moved")
	// One entry at a time, so a test can stop the process midway.
	entries, _ := os.ReadDir(filepath.Join(bin, "x"))
	for i, e := range entries {
		os.RemoveAll(filepath.Join(bin, "x", e.Name()))
		if i == 0 {
			failpoint(step + ".deleting")
		}
	}
	if err := os.RemoveAll(bin); err != nil {
		return fmt.Errorf("sandbox: delete %s: %w", p, err)
	}
	return nil
}

// sweep runs at start, before any exec: it empties the trash and removes
// half-unpacked restores, folders of retired or never-recorded sandboxes,
// and the folder of a suspension that was recorded but not finished when
// the server stopped, once its archive is the one recorded.
func (m *Manager) sweep(ctx context.Context) error {
	if err := os.RemoveAll(m.trashDir()); err != nil {
		return fmt.Errorf("sandbox: empty trash: %w", err)
	}
	entries, err := os.ReadDir(m.cfg.Dir)
	if err != nil {
		return fmt.Errorf("sandbox: list %s: %w", m.cfg.Dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		errs = append(errs, m.sweepOne(ctx, e.Name()))
	}
	return errors.Join(errs...)
}

func (m *Manager) sweepOne(ctx context.Context, id string) error {
	ws := m.workspaceDir(id)
	if err := os.RemoveAll(ws + ".restoring"); err != nil {
		return fmt.Errorf("sandbox: remove unfinished restore of %s: %w", id, err)
	}
	rec, err := m.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) || err == nil && rec.State == StateRetired:
		return m.discard(m.machineDir(id), "recover")
	case err != nil:
		return fmt.Errorf("sandbox: recover %s: %w", id, err)
	case rec.State != StateSuspended || rec.ArchiveError != "":
		return nil // running (archived below) or a kept folder
	}
	if _, err := os.Stat(ws); err != nil {
		return nil
	}
	if m.archiveRecorded(ctx, rec) {
		return m.discard(ws, "recover")
	}
	// The folder is all there is: keep it, and say why.
	rec.ArchiveError = "the archive is not the one recorded at suspension (missing or changed); the folder of the interrupted suspension is kept and used"
	m.cfg.Logger.Warn("sandbox: recover", "sandbox", id, "archive_error", rec.ArchiveError)
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return fmt.Errorf("sandbox: record archive error of %s: %w", id, err)
	}
	return nil
}

// archiveRecorded reports whether the stored archive is the one rec names.
func (m *Manager) archiveRecorded(ctx context.Context, rec Record) bool {
	if rec.ArchiveAt.IsZero() {
		return false
	}
	if rec.ArchiveSHA256 == "" { // recorded before checksums were kept
		info, err := m.cfg.Archives.Stat(ctx, rec.ArchiveRef())
		return err == nil && info.Bytes == rec.ArchiveBytes
	}
	sum, err := archive.Checksum(ctx, m.cfg.Archives, rec.ArchiveRef())
	return err == nil && sum == rec.ArchiveSHA256
}
