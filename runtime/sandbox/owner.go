package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Ownership shares one database's sandboxes between replicas (issue 19):
// a running sandbox belongs to the replica that runs its machine. The
// Manager asks it before a machine starts and before Recover archives a
// record it finds running; nil is the single-process case, where every
// sandbox is this Manager's.
type Ownership interface {
	// Claim makes this replica the owner of sandbox id before its machine
	// starts, with one conditional write, and returns its current record
	// (the database's, newer than any in memory); ErrNotFound for a sandbox
	// never recorded, an *OwnedError when a live replica holds it.
	Claim(ctx context.Context, id string) (Record, error)
	// Recoverable reports whether a record found running at start is this
	// replica's to archive (hasFolder: its workspace folder is here): a
	// live replica's machine is still running.
	Recoverable(ctx context.Context, rec Record, hasFolder bool) bool
	// Holds reports whether this replica still holds sandbox id, whose
	// machine it runs: a replica cut off from the database past its lease
	// (slow, paused, partitioned) may find that another took the sandbox
	// over and restored it from its archive.
	Holds(ctx context.Context, id string) (bool, error)
}

// OwnedError is Claim's answer for a sandbox another replica runs.
type OwnedError struct {
	ID, Replica string
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("sandbox %s runs on replica %s", e.ID, e.Replica)
}

// claimLocked refreshes b's record from the Ownership's claim (b.mu held,
// no machine running here).
func (m *Manager) claimLocked(ctx context.Context, b *box) error {
	if m.cfg.Owner == nil {
		return nil
	}
	rec, err := m.cfg.Owner.Claim(ctx, b.id)
	if errors.Is(err, ErrNotFound) {
		return nil // a new sandbox: its first record names this replica
	}
	if err != nil {
		return err
	}
	b.rec = rec
	return nil
}

// superseded checks, before b's machine is archived (b.mu held), that no
// other replica took b over while this one was cut off. A machine taken
// over is stale: archiving it would overwrite the new owner's archive with
// older work, and recording it would mark the sandbox suspended while the
// new owner runs it. It is stopped unarchived, its folder set aside
// (workspace.superseded, removed at retirement) so no later start here
// uses it, and b takes the stored record. An error (the database does not
// answer) leaves the machine running: the next tick asks again.
func (m *Manager) superseded(ctx context.Context, b *box) (bool, error) {
	if m.cfg.Owner == nil || b.machine == nil {
		return false, nil
	}
	held, err := m.cfg.Owner.Holds(ctx, b.id)
	if err != nil {
		return false, fmt.Errorf("sandbox: does this replica still hold %s: %w", b.id, err)
	}
	if held {
		return false, nil
	}
	if err := b.machine.Stop(); err != nil {
		m.cfg.Logger.Warn("sandbox: stop", "sandbox", b.id, "err", err)
	}
	b.machine = nil
	ws := m.workspaceDir(b.id)
	aside := ws + ".superseded"
	if err := os.RemoveAll(aside); err != nil {
		return true, fmt.Errorf("sandbox: set aside the superseded workspace of %s: %w", b.id, err)
	}
	if err := os.Rename(ws, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return true, fmt.Errorf("sandbox: set aside the superseded workspace of %s: %w", b.id, err)
	}
	if rec, err := m.cfg.Store.Get(ctx, b.id); err == nil {
		b.rec, b.storedActive = rec, rec.LastActiveAt
	}
	m.cfg.Logger.Warn("sandbox: another replica took this sandbox over while this one was cut off; its machine here is stopped unarchived, its folder set aside",
		"sandbox", b.id, "owner", b.rec.Owner, "folder", aside)
	return true, nil
}

// CountRunning is the number of machines this Manager runs now.
func (m *Manager) CountRunning() int {
	m.mu.Lock()
	boxes := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		boxes = append(boxes, b)
	}
	m.mu.Unlock()
	n := 0
	for _, b := range boxes {
		b.mu.Lock()
		if b.machine != nil {
			n++
		}
		b.mu.Unlock()
	}
	return n
}

// OutputOf is the OutputFunc WithOutput put on ctx, or nil: a replica that
// forwards an exec hands the owner's live output to it.
func OutputOf(ctx context.Context) OutputFunc {
	fn, _ := ctx.Value(outputKey{}).(OutputFunc)
	return fn
}
