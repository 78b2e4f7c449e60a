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
	rec := b.rec
	now := m.now()
	if !m.archiveInto(ctx, &rec, now) {
		if !storeWasDown(rec.ArchiveError) {
			// Another reason now (the disk is full …): record it, and leave
			// the sandbox to the usual retirement rules.
			if err := m.cfg.Store.Put(ctx, rec); err != nil {
				return fmt.Errorf("sandbox: record archive error of %s: %w", rec.ID, err)
			}
			b.rec = rec
			m.notify(rec)
		}
		return nil
	}
	if err := m.cfg.Store.Put(ctx, rec); err != nil {
		return fmt.Errorf("sandbox: record archive of %s: %w", rec.ID, err)
	}
	b.rec = rec
	m.notify(rec)
	m.usage(rec, UsageArchiveBytes, float64(rec.ArchiveBytes), now)
	m.cfg.Logger.Info("sandbox: archived once the store answered again", "sandbox", rec.ID, "bytes", rec.ArchiveBytes)
	if err := m.discard(m.workspaceDir(rec.ID), "suspend"); err != nil {
		m.cfg.Logger.Warn("sandbox: remove archived workspace", "sandbox", rec.ID, "err", err)
	}
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
