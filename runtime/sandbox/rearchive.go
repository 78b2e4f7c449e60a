package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// StoreRetryEvery is how often a suspended sandbox whose archiving failed
// because the archive store was down is archived again, from the folder
// its suspension kept.
const StoreRetryEvery = time.Minute

// storeWasDown reports whether an archive error says the store could not be
// reached (archive.UnavailableError's text), not that the workspace did not
// fit: such a sandbox is archived again as soon as the store answers, and
// never retired while its folder holds files no archive does.
func storeWasDown(archiveError string) bool {
	return strings.Contains(archiveError, "the archive store ") && strings.Contains(archiveError, " is unavailable (")
}

// KeptOn is the replica holding rec's newest /workspace when that is a
// folder a suspension kept because the store was down (Record.Owner, which
// the Store keeps for such a record), else "": no other replica may
// restore an older archive over it, retire it, or take it over.
func KeptOn(rec Record) string {
	if rec.State != StateSuspended || !storeWasDown(rec.ArchiveError) {
		return ""
	}
	return rec.Owner
}

// KeptError refuses a start on a replica that does not hold the newest
// /workspace while the replica that does is down.
type KeptError struct {
	ID, Replica string
	// SuspendedAt is when the kept folder stopped changing; ArchiveAt is
	// the older archive's time (zero: none).
	SuspendedAt, ArchiveAt time.Time
}

func (e *KeptError) Error() string {
	older := "there is no older archive"
	if !e.ArchiveAt.IsZero() {
		older = "the archive in the store is older (" + e.ArchiveAt.UTC().Format(time.RFC3339) + ")"
	}
	return fmt.Sprintf("the newest /workspace of sandbox %s (suspended at %s) is a folder kept on replica %s, which is down, "+
		"because the archive store was down when it was suspended; %s, so it is not restored here, which would lose the work since: "+
		"start replica %s again with its data folder (it archives the folder once the store answers), then try again",
		e.ID, e.SuspendedAt.UTC().Format(time.RFC3339), e.Replica, older, e.Replica)
}

// self is this replica's id when the Ownership says it ("" on one process).
func (m *Manager) self() string {
	if o, ok := m.cfg.Owner.(interface{ Replica() string }); ok {
		return o.Replica()
	}
	return ""
}

// retryArchives archives again, at most every StoreRetryEvery, each
// suspended sandbox whose folder this replica kept because the store was
// down. Once the archive is stored and recorded the folder goes, as after
// a suspension that went well.
func (m *Manager) retryArchives(ctx context.Context) error {
	m.mu.Lock()
	due := !m.now().Before(m.nextArchiveRetry)
	if due {
		m.nextArchiveRetry = m.now().Add(StoreRetryEvery)
	}
	m.mu.Unlock()
	if !due {
		return nil
	}
	if p, ok := m.cfg.Archives.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return nil // still down: archiving would be work thrown away
		}
	}
	suspended, err := m.cfg.Store.ListByState(ctx, StateSuspended)
	if err != nil {
		return fmt.Errorf("sandbox: list suspended: %w", err)
	}
	var errs []error
	for _, rec := range suspended {
		if !storeWasDown(rec.ArchiveError) {
			continue
		}
		if _, err := os.Stat(m.workspaceDir(rec.ID)); err != nil {
			continue // another replica kept the folder, or it is gone
		}
		errs = append(errs, m.rearchive(ctx, rec))
	}
	return errors.Join(errs...)
}

func (m *Manager) rearchive(ctx context.Context, stored Record) error {
	b := m.adopt(stored)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.gone && b.machine == nil && b.rec.ID == stored.ID {
		b.rec = stored // the stored record is the newer
	}
	if b.gone || b.machine != nil || b.rec.State != StateSuspended || !storeWasDown(b.rec.ArchiveError) {
		return nil // an exec woke it, or it was archived meanwhile
	}
	// With replicas, the record is written back only while it is as read:
	// another replica may have changed it since the list (taken the sandbox
	// over, restored or retired it). It is looked at again before the
	// upload, which spares an upload thrown away, and the write is
	// conditional, for a change during the upload. The upload is a new
	// generation (archive.Save), so even a late one never replaces the
	// archive another replica recorded meanwhile.
	expect := b.rec
	cond, _ := m.cfg.Store.(CondStore)
	if cond != nil {
		cur, err := m.cfg.Store.Get(ctx, expect.ID)
		if err != nil {
			return fmt.Errorf("sandbox: read %s before archiving it again: %w", expect.ID, err)
		}
		if !sameGeneration(cur, expect) {
			return m.keptSuperseded(ctx, b, cur)
		}
	}
	put := func(rec Record) (bool, error) {
		if cond != nil {
			return cond.PutIf(ctx, rec, expect)
		}
		return true, m.cfg.Store.Put(ctx, rec)
	}
	rec := b.rec
	now := m.now()
	if !m.archiveInto(ctx, &rec, now) {
		if !storeWasDown(rec.ArchiveError) {
			// Another reason now (the disk is full …): record it, and leave
			// the sandbox to the usual retirement rules.
			wrote, err := put(rec)
			if err != nil {
				return fmt.Errorf("sandbox: record archive error of %s: %w", rec.ID, err)
			}
			if !wrote {
				return m.keptSuperseded(ctx, b, Record{})
			}
			b.rec = rec
			m.notify(rec)
		}
		return nil
	}
	wrote, err := put(rec)
	if err != nil {
		return fmt.Errorf("sandbox: record archive of %s: %w", rec.ID, err)
	}
	if !wrote {
		m.dropUnrecorded(ctx, rec.ArchiveRef())
		return m.keptSuperseded(ctx, b, Record{})
	}
	m.dropArchive(ctx, expect, rec)
	b.rec = rec
	m.notify(rec)
	m.usage(rec, UsageArchiveBytes, float64(rec.ArchiveBytes), now)
	m.cfg.Logger.Info("sandbox: archived once the store answered again", "sandbox", rec.ID, "bytes", rec.ArchiveBytes)
	if err := m.discard(m.workspaceDir(rec.ID), "suspend"); err != nil {
		m.cfg.Logger.Warn("sandbox: remove archived workspace", "sandbox", rec.ID, "err", err)
	}
	return nil
}

// keptSuperseded handles a kept folder whose record another replica
// changed (b.mu held): the record is left as that replica wrote it, and
// the folder, no longer the sandbox's newest /workspace, is set aside as
// workspace.superseded (removed at retirement) so no later start here uses
// it. cur is the record as read, or zero to read it.
func (m *Manager) keptSuperseded(ctx context.Context, b *box, cur Record) error {
	if cur.ID == "" {
		var err error
		if cur, err = m.cfg.Store.Get(ctx, b.id); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("sandbox: read %s after another replica changed it: %w", b.id, err)
		}
	}
	ws := m.workspaceDir(b.id)
	aside := ws + ".superseded"
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("sandbox: set aside the superseded workspace of %s: %w", b.id, err)
	}
	if err := os.Rename(ws, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sandbox: set aside the superseded workspace of %s: %w", b.id, err)
	}
	if cur.ID != "" {
		b.rec, b.storedActive = cur, cur.LastActiveAt
	}
	m.cfg.Logger.Warn("sandbox: another replica changed this sandbox while this one archived the folder it kept; its record is left as that replica wrote it, the folder set aside",
		"sandbox", b.id, "state", cur.State, "owner", cur.Owner, "folder", aside)
	return nil
}

// archiveErrorNote is what a suspension whose archiving failed for the
// store adds to the record's archive error.
func archiveErrorNote(err error) string {
	var u *archive.UnavailableError
	if errors.As(err, &u) {
		return "; /workspace is kept on this replica and archived again as soon as the store answers"
	}
	return ""
}
