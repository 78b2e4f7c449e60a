package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/subako/subako/models"
)

// Replicas compare times written by different machines: heartbeats, lease
// expiries, "is it dead". Those times come from one clock, the database's
// (now() on PostgreSQL), never a replica's own: a replica whose clock is
// minutes off would otherwise look dead to the others (its heartbeats in
// the past), or take leases that have not run out (their expiry in its
// past), or hold its own far past their end (in its future). On SQLite
// there is one process, and its clock is the database's.

// dbNow is the database's clock: one round trip on PostgreSQL, this
// process's clock on SQLite. Tests that move time along set r.dbClock.
func (r *Runtime) dbNow(ctx context.Context) (time.Time, error) {
	if r.dbClock != nil {
		return r.dbClock.Now().UTC(), nil
	}
	if r.db.Dialect != models.Postgres {
		return r.now(), nil
	}
	var t time.Time
	if err := r.db.WithContext(ctx).Raw("SELECT now()").Scan(&t).Error; err != nil {
		return time.Time{}, fmt.Errorf("runtime: the database's clock: %w", err)
	}
	return t.UTC(), nil
}
