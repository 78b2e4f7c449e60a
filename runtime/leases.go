package runtime

import (
	"context"
	"fmt"
	"time"
)

// Leases make a timer that must run once across replicas (approval expiry,
// decay, usage roll-ups, the notification outbox's pruning, the reaper) run
// on one replica at a time. Every replica ticks; only the lease's holder
// runs. The holder renews at each tick; when it dies, another takes the
// lease once ttl has passed. On SQLite (one process) the lease is always
// this replica's, at the cost of one small write.

// RunOnce runs fn only if this replica holds (or takes) lease name for ttl,
// and reports whether it ran. The lease is taken with one conditional
// upsert, which PostgreSQL and SQLite both make atomic: of two replicas
// asking at once, one row change wins. ttl should be several ticks long, so
// a holder's slow tick does not hand the lease over while it still runs.
func (r *Runtime) RunOnce(ctx context.Context, name string, ttl time.Duration, fn func(ctx context.Context)) (ran bool, err error) {
	ok, err := r.takeLease(ctx, name, ttl)
	if err != nil || !ok {
		return false, err
	}
	fn(ctx)
	return true, nil
}

// takeLease inserts the lease, or renews it when this replica holds it, or
// takes it over when it expired, on the database's clock (dbclock.go).
func (r *Runtime) takeLease(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	now, err := r.dbNow(ctx)
	if err != nil {
		return false, fmt.Errorf("runtime: lease %s: %w", name, err)
	}
	res := r.db.WithContext(ctx).Exec(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at < ?`,
		name, r.replica.ID, now.Add(ttl), now)
	if res.Error != nil {
		return false, fmt.Errorf("runtime: lease %s: %w", name, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// runOnce is RunOnce for a timer: a failure to reach the database is logged
// (the next tick tries again), not returned.
func (r *Runtime) runOnce(ctx context.Context, name string, ttl time.Duration, fn func(ctx context.Context)) {
	if _, err := r.RunOnce(ctx, name, ttl, fn); err != nil && ctx.Err() == nil {
		r.opts.Log.Warn("runtime: timer skipped", "lease", name, "err", err)
	}
}
