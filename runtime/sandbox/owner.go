package sandbox

import (
	"context"
	"errors"
	"fmt"
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
