package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// Sandbox ownership between replicas (issue 19): a running sandbox belongs
// to the replica that runs its machine (sandboxes.replica_id), which holds
// it until lease_expires_at and renews that at every sandbox tick. A
// sandbox that is not running has no owner: any replica may start it from
// its archive in the shared store. A replica that finds a sandbox running
// on a dead replica whose lease expired takes it over with one conditional
// UPDATE, so two replicas never both restore it.

// SandboxLeaseTTL is how long a replica's heartbeat holds its running
// sandboxes: four sandbox ticks, as long as a replica takes to be dead.
const SandboxLeaseTTL = 20 * time.Second

// ownedWait bounds how long a request waits for a dead owner's lease to
// expire (or a draining owner to let go) before it is answered 503.
const ownedWait = 30 * time.Second

// multiReplica reports whether other replicas may share this database:
// SQLite refuses a second process, so there every sandbox is this one's.
func (r *Runtime) multiReplica() bool { return r.db.Dialect == models.Postgres }

// sandboxOwnership is the sandbox.Ownership of a runtime on PostgreSQL.
type sandboxOwnership struct{ r *Runtime }

var _ sandbox.Ownership = sandboxOwnership{}

// Claim takes sandbox id for this replica unless a live replica holds it.
func (o sandboxOwnership) Claim(ctx context.Context, id string) (sandbox.Record, error) {
	r := o.r
	me := r.Replica().ID
	for range 5 {
		asked := r.leaseClock() // before the database's clock is read: the lease runs from no earlier
		m, err := r.loadSandbox(ctx, id)
		var re *Error
		if errors.As(err, &re) && re.Kind == KindNotFound {
			return sandbox.Record{}, sandbox.ErrNotFound
		}
		if err != nil {
			return sandbox.Record{}, err
		}
		now, err := r.dbNow(ctx) // leases compare on the database's clock (dbclock.go)
		if err != nil {
			return sandbox.Record{}, err
		}
		if kept := sandbox.KeptOn(recordOf(m)); kept != "" && kept != me {
			// Its newest /workspace is a folder kept on replica kept: the
			// request goes there, or is refused while it is down; never a
			// restore of the older archive here, nor a write of this record.
			if _, alive, err := r.ReplicaAlive(ctx, kept); err != nil {
				return sandbox.Record{}, fmt.Errorf("runtime: is replica %s alive: %w", kept, err)
			} else if alive {
				return sandbox.Record{}, r.ownedBy(ctx, m)
			}
			return sandbox.Record{}, &sandbox.KeptError{ID: m.ID, Replica: kept, SuspendedAt: timeOf(m.SuspendedAt), ArchiveAt: timeOf(m.ArchiveAt)}
		}
		held := m.ReplicaID != "" && m.ReplicaID != me
		if held && m.LeaseExpiresAt != nil && now.Before(*m.LeaseExpiresAt) {
			return sandbox.Record{}, r.ownedBy(ctx, m)
		}
		if held {
			if _, alive, err := r.ReplicaAlive(ctx, m.ReplicaID); err != nil {
				return sandbox.Record{}, fmt.Errorf("runtime: is replica %s alive: %w", m.ReplicaID, err)
			} else if alive && m.State == string(sandbox.StateRunning) {
				return sandbox.Record{}, r.ownedBy(ctx, m)
			}
		}
		until := now.Add(SandboxLeaseTTL)
		updates := map[string]any{"replica_id": me, "lease_expires_at": until}
		failover := held && m.State == string(sandbox.StateRunning)
		if failover {
			updates["machine_seconds"], updates["archive_note"] = takeoverFigures(m, now)
		}
		q := r.db.WithContext(ctx).Model(&models.Sandbox{}).Where("id = ? AND replica_id = ?", id, m.ReplicaID)
		switch {
		case m.ReplicaID == me:
			// Already this replica's: its own requests only extend the lease.
		case m.LeaseExpiresAt != nil:
			q = q.Where("lease_expires_at = ?", *m.LeaseExpiresAt)
		default:
			q = q.Where("lease_expires_at IS NULL")
		}
		res := q.Updates(updates)
		if res.Error != nil {
			return sandbox.Record{}, fmt.Errorf("runtime: claim sandbox %s: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			continue // another replica claimed it meanwhile: look again
		}
		if failover {
			r.cluster().failovers.Add(1)
			r.opts.Log.Warn("sandbox taken over from a dead replica", "sandbox", id, "replica", m.ReplicaID)
		}
		m, err = r.loadSandbox(ctx, id)
		if err != nil {
			return sandbox.Record{}, err
		}
		r.leases().hold(m.SessionID, m.GrantName, asked)
		return recordOf(m), nil
	}
	return sandbox.Record{}, fmt.Errorf("runtime: sandbox %s changed hands five times while this replica claimed it; try again", id)
}

// takeoverFigures bills a dead replica's run of m until its lease ran out,
// and says what the takeover lost: the workspace restarts from the last
// archive (or this replica's kept folder, when it ran it before).
func takeoverFigures(m models.Sandbox, now time.Time) (float64, string) {
	secs := m.MachineSeconds
	if m.StartedAt != nil && m.LeaseExpiresAt != nil {
		secs += max(min(m.LeaseExpiresAt.Sub(*m.StartedAt), now.Sub(*m.StartedAt)).Seconds(), 0)
	}
	at := now.UTC().Format(time.RFC3339)
	if m.ArchiveAt == nil {
		return secs, fmt.Sprintf("failover at %s: replica %s stopped while running it; it had no archive, so /workspace restarts empty (lost: everything since its start)", at, m.ReplicaID)
	}
	return secs, fmt.Sprintf("failover at %s: replica %s stopped while running it; lost: the work since the last archive at %s",
		at, m.ReplicaID, m.ArchiveAt.UTC().Format(time.RFC3339))
}

// ownedBy is the OwnedError for m, with where its owner is reached.
func (r *Runtime) ownedBy(ctx context.Context, m models.Sandbox) *sandbox.OwnedError {
	return &sandbox.OwnedError{ID: m.ID, Replica: m.ReplicaID}
}

// Recoverable: at start, a replica archives the running sandboxes it (or
// the single replica before it) left, and those of dead replicas whose
// folders it holds; a live replica's machines still run.
func (o sandboxOwnership) Recoverable(ctx context.Context, rec sandbox.Record, hasFolder bool) bool {
	r := o.r
	if rec.Owner == "" || rec.Owner == r.Replica().ID {
		return true
	}
	_, alive, err := r.ReplicaAlive(ctx, rec.Owner)
	return err == nil && !alive && hasFolder
}

// Replica names this replica to the Manager: a suspension that keeps its
// folder for a store that is down records it (sandbox.KeptOn).
func (o sandboxOwnership) Replica() string { return o.r.Replica().ID }

// Holds: this replica still runs sandbox id only while its record says
// running here; a record another replica took over (or recorded suspended
// from its archive) means this replica's machine is stale.
func (o sandboxOwnership) Holds(ctx context.Context, id string) (bool, error) {
	m, err := o.r.loadSandbox(ctx, id)
	var re *Error
	if errors.As(err, &re) && re.Kind == KindNotFound {
		return true, nil // gone, not taken: as before, the suspension goes on
	}
	if err != nil {
		return false, err
	}
	return m.State == string(sandbox.StateRunning) && m.ReplicaID == o.r.Replica().ID, nil
}

// renewSandboxLeases extends this replica's hold on the sandboxes it runs.
func (r *Runtime) renewSandboxLeases(ctx context.Context) error {
	if !r.multiReplica() {
		return nil
	}
	asked := r.leaseClock()
	now, err := r.dbNow(ctx)
	if err != nil {
		return fmt.Errorf("runtime: renew sandbox leases: %w", err)
	}
	var renewed []models.Sandbox
	err = r.db.WithContext(ctx).Model(&renewed).
		Clauses(clause.Returning{Columns: []clause.Column{{Name: "session_id"}, {Name: "grant_name"}}}).
		Where("replica_id = ?", r.Replica().ID).Update("lease_expires_at", now.Add(SandboxLeaseTTL)).Error
	if err != nil {
		return fmt.Errorf("runtime: renew sandbox leases: %w", err)
	}
	r.leases().renewed(renewed, asked)
	return nil
}

// Serving an exec's owner check from memory (issue 11). A warm exec on
// PostgreSQL read its sandbox's row to learn which replica runs it. This
// replica can know without asking while its lease holds: the row named it
// when its Claim or its last renewal wrote the lease, and that lease runs
// until the database's clock, read after asked, passes asked + TTL; no
// other replica takes a sandbox over before its lease ran out (Claim,
// suspendOrphans), and this replica's own suspension stops its machine
// first (leaseHeld also asks the Manager). heldFor is how long after asked
// the memory is trusted: half the lease, so a renewal every tick (5 s)
// keeps it fresh, and the database's clock running up to 10 s ahead of
// this one's (a clock step) still cannot let two replicas run one sandbox.
// Past it, or for a sandbox not renewed, the row is read as before.
const heldFor = SandboxLeaseTTL / 2

// leaseMemo is each sandbox's (session and grant) time until which this
// replica's lease on it surely holds, on leaseClock.
type leaseMemo struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// leaseMemos holds each runtime's leaseMemo (tests build many runtimes).
var leaseMemos sync.Map // *Runtime → *leaseMemo

func (r *Runtime) leases() *leaseMemo {
	if l, ok := leaseMemos.Load(r); ok {
		return l.(*leaseMemo)
	}
	l, _ := leaseMemos.LoadOrStore(r, &leaseMemo{until: map[string]time.Time{}})
	return l.(*leaseMemo)
}

// leaseClock is the clock leaseMemo counts on: this process's monotonic
// clock, or the tests' stand-in for the database's when they move time.
func (r *Runtime) leaseClock() time.Time {
	if r.dbClock != nil {
		return r.dbClock.Now()
	}
	return time.Now()
}

func (l *leaseMemo) hold(sessionID, grant string, asked time.Time) {
	l.mu.Lock()
	l.until[sessionID+"\x00"+grant] = asked.Add(heldFor)
	l.mu.Unlock()
}

// renewed keeps the sandboxes a renewal returned, and only those: a
// sandbox it did not renew is no longer this replica's.
func (l *leaseMemo) renewed(ms []models.Sandbox, asked time.Time) {
	until := make(map[string]time.Time, len(ms))
	for _, m := range ms {
		until[m.SessionID+"\x00"+m.GrantName] = asked.Add(heldFor)
	}
	l.mu.Lock()
	l.until = until
	l.mu.Unlock()
}

func (l *leaseMemo) drop(sessionID, grant string) {
	l.mu.Lock()
	delete(l.until, sessionID+"\x00"+grant)
	l.mu.Unlock()
}

// leaseHeld reports whether e's sandbox surely runs here, by this
// replica's lease, without reading its row.
func (r *Runtime) leaseHeld(e SandboxExec) bool {
	set := r.sandboxes()
	if set == nil {
		return false
	}
	l := r.leases()
	l.mu.Lock()
	until, ok := l.until[e.SessionID+"\x00"+e.Grant.Name]
	l.mu.Unlock()
	return ok && r.leaseClock().Before(until) && set.mgr.Runs(e.SessionID, e.Grant.Name)
}

// orphanGrace is how long after its lease ran out a sandbox left running
// by a dead replica waits for a request (which restores it at once) or the
// dead replica's restart (which archives its folder) before it is recorded
// suspended from its last archive.
const orphanGrace = 2 * time.Minute

// suspendOrphans records as suspended the sandboxes dead replicas left
// running, so the Sandboxes tab says so and their next exec restores them
// anywhere. Run under a lease: once across replicas.
func (r *Runtime) suspendOrphans(ctx context.Context) error {
	var ms []models.Sandbox
	dbNow, err := r.dbNow(ctx)
	if err != nil {
		return fmt.Errorf("runtime: find orphaned sandboxes: %w", err)
	}
	cutoff := dbNow.Add(-orphanGrace)
	err = r.db.WithContext(ctx).Where("state = ? AND replica_id <> '' AND lease_expires_at < ?", string(sandbox.StateRunning), cutoff).
		Limit(100).Find(&ms).Error
	if err != nil {
		return fmt.Errorf("runtime: find orphaned sandboxes: %w", err)
	}
	var errs []error
	for _, m := range ms {
		if _, alive, err := r.ReplicaAlive(ctx, m.ReplicaID); err != nil || alive {
			errs = append(errs, err)
			continue
		}
		now := dbNow
		secs, note := takeoverFigures(m, now)
		res := r.db.WithContext(ctx).Model(&models.Sandbox{}).
			Where("id = ? AND replica_id = ? AND lease_expires_at = ?", m.ID, m.ReplicaID, *m.LeaseExpiresAt).
			Updates(map[string]any{"state": string(sandbox.StateSuspended), "suspended_at": now, "replica_id": "", "lease_expires_at": gorm.Expr("NULL"),
				"machine_seconds": secs, "archive_note": note})
		if res.Error != nil {
			errs = append(errs, fmt.Errorf("runtime: suspend orphaned sandbox %s: %w", m.ID, res.Error))
			continue
		}
		if res.RowsAffected == 1 {
			r.cluster().failovers.Add(1)
			r.opts.Log.Warn("sandbox left running by a dead replica recorded suspended", "sandbox", m.ID, "replica", m.ReplicaID)
			r.publish(Event{Kind: "sandbox", ID: m.ID, SessionID: m.SessionID, State: string(sandbox.StateSuspended)})
		}
	}
	return errors.Join(errs...)
}

// sandboxTimerLease is how long one replica keeps a sandbox timer's lease:
// a few ticks, so it moves on within seconds when that replica dies.
const sandboxTimerLease = 15 * time.Second

// onceEvery reports whether this replica holds the lease of timer name
// now, so that only one replica runs it at a tick.
func (r *Runtime) onceEvery(ctx context.Context, name string) bool {
	ran, err := r.RunOnce(ctx, name, sandboxTimerLease, func(context.Context) {})
	if err != nil {
		r.opts.Log.Warn("runtime: take a timer's lease", "lease", name, "err", err)
	}
	return ran
}
