package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// startLocked brings up b's machine (b.mu held): a new sandbox gets an empty
// /workspace, a suspended or retired one its archive.
func (m *Manager) startLocked(ctx context.Context, b *box, key Key) error {
	if err := m.prepareWorkspace(ctx, &b.rec); err != nil {
		return m.failLocked(ctx, b, err)
	}
	var skills map[string]string
	if m.cfg.Skills != nil {
		var err error
		if skills, err = m.cfg.Skills(ctx, key.SessionID); err != nil {
			return m.failLocked(ctx, b, fmt.Errorf("sandbox: skills of session %s: %w", key.SessionID, err))
		}
	}
	b.rec.Release, b.rec.Network = key.Release, key.Network
	machine, err := m.cfg.Driver.Start(ctx, Spec{
		ID: b.rec.ID, Release: key.Release, Network: key.Network,
		WorkspaceDir: m.workspaceDir(b.rec.ID), Skills: skills, Limits: m.limitsFor(key),
		VolumeDir: key.VolumeDir, VolumeWrite: key.VolumeWrite,
	})
	if err != nil {
		return m.failLocked(ctx, b, err)
	}
	now := m.now()
	rec := b.rec
	rec.State, rec.Error = StateRunning, ""
	rec.StartedAt, rec.LastActiveAt = now, now
	rec.SuspendedAt, rec.RetiredAt = time.Time{}, time.Time{}
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		machine.Stop()
		return fmt.Errorf("sandbox: record start of %s: %w", rec.ID, err)
	}
	failpoint("start.recorded")
	b.rec, b.machine, b.storedActive = rec, machine, rec.LastActiveAt
	b.idle = key.IdleTimeout
	m.notify(rec)
	return nil
}

// failLocked records a failed start so the console shows why, and returns err.
func (m *Manager) failLocked(ctx context.Context, b *box, err error) error {
	if b.rec.State == "" {
		return err // never started: nothing to show yet
	}
	b.rec.Error = err.Error()
	if perr := m.cfg.Store.Put(context.WithoutCancel(ctx), b.rec); perr != nil {
		m.cfg.Logger.Warn("sandbox: record start failure", "sandbox", b.rec.ID, "err", perr)
	}
	m.notify(b.rec)
	return err
}

func (m *Manager) machineDir(id string) string   { return filepath.Join(m.cfg.Dir, id) }
func (m *Manager) workspaceDir(id string) string { return filepath.Join(m.cfg.Dir, id, "workspace") }

// prepareWorkspace leaves <Dir>/<id>/workspace ready to bind. The folder is
// removed only once an archive holding it is recorded, so it is used as is
// while the record says running (a suspension that could not be recorded)
// or suspended with a failed archiving: then it is newer than any archive.
// Any other folder is a leftover the archive replaces.
func (m *Manager) prepareWorkspace(ctx context.Context, rec *Record) error {
	ws := m.workspaceDir(rec.ID)
	if err := os.MkdirAll(m.machineDir(rec.ID), 0o711); err != nil {
		return fmt.Errorf("sandbox: create folder of %s: %w", rec.ID, err)
	}
	_, statErr := os.Stat(ws)
	kept := rec.State == StateRunning || rec.State == StateSuspended && rec.ArchiveError != ""
	if kept && statErr == nil {
		m.cfg.Logger.Warn("sandbox: starting from the kept folder", "sandbox", rec.ID, "archive_error", rec.ArchiveError)
		return nil
	}
	if _, err := m.cfg.Archives.Stat(ctx, rec.ArchiveRef()); errors.Is(err, archive.ErrNotExist) {
		// Starting empty: a leftover folder (of a retirement cut short, say)
		// is not this sandbox's /workspace any more.
		if err := m.discard(ws, "start"); err != nil {
			return fmt.Errorf("sandbox: clear workspace of %s: %w", rec.ID, err)
		}
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return fmt.Errorf("sandbox: create workspace of %s: %w", rec.ID, err)
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("sandbox: archive of %s: %w", rec.ID, err)
	}
	return m.restore(ctx, rec.ArchiveRef(), ws)
}

// restore unpacks the archive the record names next to the workspace and
// swaps it in, so a refused or broken archive leaves the old folder
// untouched.
func (m *Manager) restore(ctx context.Context, ref archive.Ref, ws string) error {
	id := ref.ID
	tmp := ws + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("sandbox: clear %s: %w", tmp, err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("sandbox: restore %s: %w", id, err)
	}
	opts := archive.RestoreOptions{MaxExpandedBytes: m.cfg.MaxExpandedBytes}
	if _, err := archive.Load(ctx, m.cfg.Archives, ref, tmp, opts); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("sandbox: restore /workspace of %s: %w", id, err)
	}
	failpoint("restore.unpacked")
	if err := m.discard(ws, "restore"); err != nil {
		return fmt.Errorf("sandbox: replace workspace of %s: %w", id, err)
	}
	if err := os.Rename(tmp, ws); err != nil {
		return fmt.Errorf("sandbox: replace workspace of %s: %w", id, err)
	}
	failpoint("restore.swapped")
	return nil
}

// suspendLocked stops b's machine, archives its workspace and records the
// suspension (b.mu held), and only then removes the folder: a crash at any
// step leaves either the folder with a record that says so, or a recorded
// archive. billUntil ends the machine-time of this run.
func (m *Manager) suspendLocked(ctx context.Context, b *box, billUntil time.Time) error {
	if gone, err := m.superseded(ctx, b); gone || err != nil {
		return err
	}
	// A machine that ran here is recorded suspended only while the record
	// still names this replica running it: a takeover landing after the
	// check above (during the archiving, say) must not be overwritten with
	// "suspended" while the new owner runs the sandbox.
	cond, _ := m.cfg.Store.(CondStore)
	expect := b.rec
	expect.State, expect.Owner = StateRunning, m.self()
	conditional := cond != nil && m.cfg.Owner != nil && b.machine != nil
	if b.machine != nil {
		if err := b.machine.Stop(); err != nil {
			m.cfg.Logger.Warn("sandbox: stop", "sandbox", b.rec.ID, "err", err)
		}
		b.machine = nil
	}
	failpoint("suspend.stopped")
	now := m.now()
	rec := b.rec
	archived := m.archiveInto(ctx, &rec, now)
	if !archived && storeWasDown(rec.ArchiveError) {
		rec.Owner = m.self() // the record says where the newest /workspace is (KeptOn)
	}
	failpoint("suspend.archived")
	ran := max(billUntil.Sub(rec.StartedAt).Seconds(), 0)
	rec.MachineSeconds += ran
	rec.State, rec.SuspendedAt = StateSuspended, now
	if conditional {
		wrote, err := cond.PutIf(ctx, rec, expect)
		if err != nil {
			return fmt.Errorf("sandbox: record suspension of %s: %w", rec.ID, err)
		}
		if !wrote {
			if archived {
				m.dropUnrecorded(ctx, rec.ArchiveRef())
			}
			return m.keptSuperseded(ctx, b, Record{})
		}
	} else if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return fmt.Errorf("sandbox: record suspension of %s: %w", rec.ID, err)
	}
	failpoint("suspend.recorded")
	m.dropArchive(ctx, b.rec, rec)
	b.rec = rec
	m.notify(rec)
	m.usage(rec, UsageMachineSeconds, ran, now)
	m.usage(rec, UsageArchiveBytes, float64(rec.ArchiveBytes), now)
	if archived {
		// The recorded archive holds the workspace now; removing the folder
		// here, in the background, spares the next exec the deletion.
		if err := m.discard(m.workspaceDir(rec.ID), "suspend"); err != nil {
			m.cfg.Logger.Warn("sandbox: remove archived workspace", "sandbox", rec.ID, "err", err)
		}
	}
	return nil
}

// archiveInto saves the workspace as a new generation of the sandbox's
// archive and records the outcome in rec, reporting whether a new archive
// holds the folder; a failure keeps the previous archive and the folder,
// and says why. The archive rec named before is left in the store: it goes
// (dropArchive) once the record naming the new one is written.
func (m *Manager) archiveInto(ctx context.Context, rec *Record, now time.Time) bool {
	ws := m.workspaceDir(rec.ID)
	if _, err := os.Stat(ws); err != nil {
		rec.ArchiveError = fmt.Sprintf("no workspace folder to archive: %v", err)
		return false
	}
	if err := m.checkFreeDisk("write an archive"); err != nil {
		rec.ArchiveError = err.Error() + "; /workspace is kept and the next exec uses it"
		m.cfg.Logger.Warn("sandbox: archive", "sandbox", rec.ID, "err", err)
		return false
	}
	info, st, err := archive.Save(ctx, m.cfg.Archives, rec.ID, ws, archive.Limits{MaxBytes: m.cfg.MaxArchiveBytes, MaxExpandedBytes: m.cfg.MaxExpandedBytes})
	if err != nil {
		rec.ArchiveError = err.Error() + archiveErrorNote(err)
		m.cfg.Logger.Warn("sandbox: archive", "sandbox", rec.ID, "err", err)
		return false
	}
	rec.ArchiveNote = ""
	if len(st.Skipped) > 0 {
		m.cfg.Logger.Warn("sandbox: archive left out pipes, sockets and links pointing out of /workspace", "sandbox", rec.ID, "entries", st.Skipped)
		rec.ArchiveNote = skippedNote(st.Skipped)
	}
	rec.ArchiveBytes, rec.ArchiveAt, rec.ArchiveSHA256, rec.ArchiveError = info.Bytes, now, info.SHA256, ""
	rec.ArchiveGen = info.Gen
	return true
}

// dropArchive deletes the archive generation the record named, once the
// record now written names another: never before, so a crash or a failed
// write leaves at worst an archive no record names (sweepArchives deletes
// it at retirement), never a record naming a missing one.
// A failure is only logged, for the same reason.
func (m *Manager) dropArchive(ctx context.Context, was, now Record) {
	if was.ArchiveRef() == now.ArchiveRef() || was.ArchiveAt.IsZero() && was.ArchiveGen == "" {
		return
	}
	if err := m.cfg.Archives.Delete(context.WithoutCancel(ctx), was.ArchiveRef()); err != nil {
		m.cfg.Logger.Warn("sandbox: delete the archive a newer one replaced; it stays until the sandbox retires", "sandbox", was.ID, "generation", was.ArchiveGen, "err", err)
	}
}

// dropUnrecorded deletes an archive just written whose record write was
// refused (not failed: a failed write may have been made), which no
// record names.
func (m *Manager) dropUnrecorded(ctx context.Context, ref archive.Ref) {
	if err := m.cfg.Archives.Delete(context.WithoutCancel(ctx), ref); err != nil {
		m.cfg.Logger.Warn("sandbox: delete an archive no record names; it stays until the sandbox retires", "sandbox", ref.ID, "generation", ref.Gen, "err", err)
	}
}

// skippedNote names what an archive left out, the first few by path.
func skippedNote(paths []string) string {
	const show = 10
	list := strings.Join(paths[:min(len(paths), show)], ", ")
	if len(paths) > show {
		list += fmt.Sprintf(" and %d more", len(paths)-show)
	}
	return "left out of the archive, so gone after a restore (pipes, sockets and links pointing out of /workspace): " + list
}
