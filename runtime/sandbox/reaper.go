package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// ErrNotRetired is returned by DeleteArchive for a sandbox that is not
// retired; the API answers 409.
var ErrNotRetired = errors.New("sandbox: the archive can only be deleted once the sandbox is retired")

// Tick suspends sandboxes idle for IdleTimeout and retires sandboxes
// suspended for RetireAfter. The lead calls it every few seconds. Timers are
// derived from the records' timestamps, so a restart resumes them.
func (m *Manager) Tick(ctx context.Context) error {
	m.mu.Lock()
	boxes := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		boxes = append(boxes, b)
	}
	m.mu.Unlock()
	var errs []error
	for _, b := range boxes {
		b.mu.Lock()
		idle := b.machine != nil && b.active == 0 && !m.now().Before(b.rec.LastActiveAt.Add(m.idleTimeout(b)))
		if idle {
			errs = append(errs, m.suspendLocked(ctx, b, m.now()))
		} else {
			errs = append(errs, m.flushActivity(ctx, b))
		}
		b.mu.Unlock()
	}
	// Every replica, lease or not: the folders are its own (rearchive.go).
	errs = append(errs, m.retryArchives(ctx))
	if m.cfg.RetireGate != nil && !m.cfg.RetireGate(ctx) {
		return errors.Join(errs...)
	}
	suspended, err := m.cfg.Store.ListByState(ctx, StateSuspended)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("sandbox: list suspended: %w", err))...)
	}
	for _, rec := range suspended {
		if !m.now().Before(rec.SuspendedAt.Add(m.cfg.RetireAfter)) {
			errs = append(errs, m.retire(ctx, rec))
		}
	}
	return errors.Join(errs...)
}

// flushActivity records a running sandbox's last activity if execs moved it
// since it was last recorded (b.mu held): one write per Tick at most, in
// place of one per exec. A crash loses at most a Tick's worth of it, and
// Recover bills a machine it finds running until its recorded last activity
// plus IdleTimeout.
func (m *Manager) flushActivity(ctx context.Context, b *box) error {
	if b.machine == nil || b.rec.State != StateRunning || b.rec.LastActiveAt.Equal(b.storedActive) {
		return nil
	}
	if m.cfg.Owner != nil {
		// A replica that lost the sandbox must not record it as its own.
		// With a CondStore the write itself is conditional on the record
		// still naming this replica running it: a takeover landing between
		// a Holds and a Put would be overwritten (the record pointing back
		// at this replica while the new owner runs the sandbox).
		if cond, ok := m.cfg.Store.(CondStore); ok {
			expect := b.rec
			expect.State, expect.Owner = StateRunning, m.self()
			wrote, err := cond.PutIf(ctx, b.rec, expect)
			if err != nil {
				return fmt.Errorf("sandbox: record last activity of %s: %w", b.rec.ID, err)
			}
			if wrote {
				b.storedActive = b.rec.LastActiveAt
			}
			return nil // not written: superseded, found at the suspension
		}
		if held, err := m.cfg.Owner.Holds(ctx, b.id); err != nil || !held {
			return err
		}
	}
	if err := m.cfg.Store.Put(ctx, b.rec); err != nil {
		return fmt.Errorf("sandbox: record last activity of %s: %w", b.rec.ID, err)
	}
	b.storedActive = b.rec.LastActiveAt
	return nil
}

// heldRetirements bounds how many RetireAfter periods a sandbox whose
// workspace does not fit an archive is kept from retiring.
const heldRetirements = 4

// retire removes a suspended sandbox's folders; only its archive is left.
func (m *Manager) retire(ctx context.Context, stored Record) error {
	b := m.adopt(stored)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.gone && b.machine == nil && b.rec.ID == stored.ID {
		// The stored record is the newer: another replica may have run and
		// suspended this sandbox since this box was last used here.
		b.rec = stored
	}
	if b.gone || b.machine != nil || b.rec.State != StateSuspended {
		return nil // an exec woke it meanwhile
	}
	rec := b.rec
	_, statErr := os.Stat(m.workspaceDir(rec.ID))
	folder := !errors.Is(statErr, fs.ErrNotExist)
	if storeWasDown(rec.ArchiveError) && (folder || rec.Owner != m.self()) {
		// Archived as soon as the store answers (retryArchives), retired
		// after: by the replica keeping the folder, or by any once archived.
		return nil
	}
	if rec.ArchiveError != "" && folder {
		// The folder is newer than the archive: it goes only once an archive
		// holds it. Archiving it again is tried once per RetireAfter (a
		// suspended folder does not change; a server given a larger limit
		// may now fit it), and until then the sandbox stays suspended, for
		// at most heldRetirements × RetireAfter: a session that ended can
		// no longer make it fit, and its disk must come back.
		giveUp := rec.SuspendedAt.Add(heldRetirements * m.cfg.RetireAfter)
		if !m.now().Before(giveUp) {
			kept := "without an archive"
			if !rec.ArchiveAt.IsZero() {
				kept = "with the archive of " + rec.ArchiveAt.UTC().Format(time.RFC3339)
			}
			rec.ArchiveNote = fmt.Sprintf("retired %s: /workspace stayed over the archive limit until %s, and its newer files were dropped",
				kept, giveUp.UTC().Format(time.RFC3339))
			m.cfg.Logger.Warn("sandbox: retired with an older archive", "sandbox", rec.ID, "archive_error", rec.ArchiveError)
		} else {
			if !b.retryRetire.IsZero() && m.now().Before(b.retryRetire) {
				return nil
			}
			b.retryRetire = m.now().Add(m.cfg.RetireAfter)
			m.archiveInto(ctx, &rec, m.now())
			if rec.ArchiveError != "" {
				rec.ArchiveError += fmt.Sprintf("; not retired: the sandbox stays suspended with its folder, which holds files the archive does not; "+
					"an exec that removes files lets it archive, else it retires with the older archive at %s", giveUp.UTC().Format(time.RFC3339))
				if err := m.cfg.Store.Put(ctx, rec); err != nil {
					return fmt.Errorf("sandbox: record archive error of %s: %w", rec.ID, err)
				}
				b.rec = rec
				m.notify(rec)
				return nil
			}
		}
	}
	// Recorded first: a retired sandbox's folder is a leftover whatever it
	// holds, so a crash while it is deleted loses nothing.
	rec.State, rec.RetiredAt = StateRetired, m.now()
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return fmt.Errorf("sandbox: record retirement of %s: %w", rec.ID, err)
	}
	failpoint("retire.recorded")
	m.dropArchive(ctx, b.rec, rec) // archived again just above, if at all
	m.sweepArchives(ctx, rec)
	b.rec = rec
	m.forget(b)
	m.notify(rec)
	if err := m.discard(m.machineDir(rec.ID), "retire"); err != nil {
		return fmt.Errorf("sandbox: retire %s: %w", rec.ID, err)
	}
	return nil
}

// sweepArchives deletes the archives of a sandbox just retired that its
// record does not name and that were written before its last suspension:
// what a crash between an upload and the write of its record left. An
// upload still under way (a replica archiving a folder it kept, an
// Archive.upload) is newer than the suspension and is left to its writer,
// which records it or deletes it.
func (m *Manager) sweepArchives(ctx context.Context, rec Record) {
	all, err := m.cfg.Archives.List(ctx, rec.ID)
	if err != nil {
		m.cfg.Logger.Warn("sandbox: list the archives of a retired sandbox; unrecorded ones stay until its archive is deleted", "sandbox", rec.ID, "err", err)
		return
	}
	for _, a := range all {
		if a.Ref() == rec.ArchiveRef() || !a.ModTime.Before(rec.SuspendedAt) {
			continue
		}
		if err := m.cfg.Archives.Delete(ctx, a.Ref()); err != nil {
			m.cfg.Logger.Warn("sandbox: delete an archive no record names", "sandbox", rec.ID, "generation", a.Gen, "err", err)
		}
	}
}

// Recover runs once at server start, before any exec. It finishes what a
// crash interrupted (see sweep), then archives the sandboxes a crashed or
// restarted server left running: they died with it, their workspace
// folders are still on disk, and they are recorded as suspended. Their
// machine time ends at their last activity plus IdleTimeout at the latest.
func (m *Manager) Recover(ctx context.Context) error {
	errs := []error{m.sweep(ctx)}
	running, err := m.cfg.Store.ListByState(ctx, StateRunning)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("sandbox: list running: %w", err))...)
	}
	for _, rec := range running {
		_, statErr := os.Stat(m.workspaceDir(rec.ID))
		if m.cfg.Owner != nil && !m.cfg.Owner.Recoverable(ctx, rec, statErr == nil) {
			continue // a live replica runs it
		}
		b := m.adopt(rec)
		b.mu.Lock()
		if err := m.recoverWorkspace(b); err != nil {
			errs = append(errs, err)
		} else if b.machine == nil && b.rec.State == StateRunning {
			until := b.rec.LastActiveAt.Add(m.cfg.IdleTimeout)
			if now := m.now(); now.Before(until) {
				until = now
			}
			errs = append(errs, m.suspendLocked(ctx, b, until))
		}
		b.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Suspend suspends one running sandbox now (for example when its session
// ends); a sandbox that is not running is left as it is.
func (m *Manager) Suspend(ctx context.Context, sessionID, grant string) error {
	m.mu.Lock()
	b, ok := m.boxes[boxKey(sessionID, grant)]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.machine == nil {
		return nil
	}
	return m.suspendLocked(ctx, b, m.now())
}

// Close suspends every running sandbox, for a clean shutdown.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	boxes := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		boxes = append(boxes, b)
	}
	m.mu.Unlock()
	var errs []error
	for _, b := range boxes {
		b.mu.Lock()
		if b.machine != nil {
			errs = append(errs, m.suspendLocked(ctx, b, m.now()))
		}
		b.mu.Unlock()
	}
	return errors.Join(errs...)
}

// OpenArchive returns the archive (tar + gzip) a sandbox's record names,
// for download. A suspension elsewhere may record a newer archive and
// delete this one between the read and the open: then it is read again.
func (m *Manager) OpenArchive(ctx context.Context, id string) (io.ReadCloser, archive.Info, error) {
	for try := 0; ; try++ {
		rec, err := m.cfg.Store.Get(ctx, id)
		if err != nil {
			return nil, archive.Info{}, fmt.Errorf("sandbox: archive of %s: %w", id, err)
		}
		rc, info, err := m.cfg.Archives.Open(ctx, rec.ArchiveRef())
		if !errors.Is(err, archive.ErrNotExist) || try == 2 {
			return rc, info, err
		}
		if now, gerr := m.cfg.Store.Get(ctx, id); gerr != nil || now.ArchiveRef() == rec.ArchiveRef() {
			return rc, info, err
		}
	}
}

// DeleteArchive deletes a retired sandbox's archive; its next exec starts
// with an empty /workspace.
func (m *Manager) DeleteArchive(ctx context.Context, id string) error {
	stored, err := m.cfg.Store.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("sandbox: delete archive of %s: %w", id, err)
	}
	b := m.adopt(stored)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone || b.rec.ID != id || b.rec.State != StateRetired {
		return ErrNotRetired
	}
	if err := archive.DeleteAll(ctx, m.cfg.Archives, id); err != nil {
		return err
	}
	rec := b.rec
	rec.ArchiveBytes, rec.ArchiveAt, rec.ArchiveSHA256, rec.ArchiveError, rec.ArchiveNote = 0, time.Time{}, "", "", ""
	rec.ArchiveGen = ""
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return fmt.Errorf("sandbox: record archive deletion of %s: %w", id, err)
	}
	b.rec = rec
	m.notify(rec)
	return nil
}
