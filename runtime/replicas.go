package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/subako/subako/models"
)

// Several `subako serve` processes may share one PostgreSQL database
// (issue 19). Each registers itself as a replica, heartbeats, and marks
// itself stopped on a graceful stop; a replica whose heartbeat is older than
// ReplicaDeadAfter is dead, and what it held (running calls, sandboxes,
// leases) may be taken over by the others.

const (
	// HeartbeatEvery is how often a replica renews its row.
	HeartbeatEvery = 5 * time.Second
	// ReplicaDeadAfter: a heartbeat older than this means the replica is
	// gone (four beats missed; clocks are assumed within a few seconds).
	ReplicaDeadAfter = 20 * time.Second
	// replicaForgetAfter removes a dead replica's row, so the table does not
	// grow with every restart of a replica with a random id.
	replicaForgetAfter = 7 * 24 * time.Hour
	maxReplicaIDBytes  = 100
	maxReplicaURLBytes = 2000
)

// ReplicaInfo names this replica: its id (--replica-id, or random) and the
// URL peers reach it at (--advertise-url; "" when not set).
type ReplicaInfo struct {
	ID  string
	URL string
}

// Replica is this process's replica; fixed from New on, before Start.
func (r *Runtime) Replica() ReplicaInfo { return r.replica }

// CheckReplicaID validates a --replica-id: printable, no spaces, bounded.
func CheckReplicaID(id string) error {
	if len(id) > maxReplicaIDBytes {
		return fmt.Errorf("--replica-id must be at most %d bytes; it has %d", maxReplicaIDBytes, len(id))
	}
	for i, c := range id {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("--replica-id must hold no spaces or control characters; found one at position %d", i+1)
		}
	}
	return nil
}

// registerReplica writes (or rewrites, for a restart under the same
// --replica-id) this replica's row as alive.
func (r *Runtime) registerReplica(ctx context.Context) error {
	now, err := r.dbNow(ctx)
	if err != nil {
		return fmt.Errorf("runtime: register replica %s: %w", r.replica.ID, err)
	}
	row := models.Replica{ID: r.replica.ID, URL: r.replica.URL, StartedAt: now, HeartbeatAt: now}
	err = r.db.WithContext(ctx).Exec(`INSERT INTO replicas (id, url, started_at, heartbeat_at, stopped_at) VALUES (?, ?, ?, ?, NULL)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL`,
		row.ID, row.URL, row.StartedAt, row.HeartbeatAt).Error
	if err != nil {
		return fmt.Errorf("runtime: register replica %s: %w", r.replica.ID, err)
	}
	r.registered.Store(true)
	return nil
}

// heartbeat renews this replica's row, on the database's clock; a row
// someone removed is written again.
func (r *Runtime) heartbeat(ctx context.Context) {
	now, err := r.dbNow(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.opts.Log.Warn("runtime: replica heartbeat", "replica", r.replica.ID, "err", err)
		}
		return
	}
	res := r.db.WithContext(ctx).Model(&models.Replica{}).Where("id = ?", r.replica.ID).
		Updates(map[string]any{"heartbeat_at": now, "stopped_at": nil})
	switch {
	case res.Error != nil:
		if ctx.Err() == nil {
			r.opts.Log.Warn("runtime: replica heartbeat", "replica", r.replica.ID, "err", res.Error)
		}
	case res.RowsAffected == 0:
		if err := r.registerReplica(ctx); err != nil && ctx.Err() == nil {
			r.opts.Log.Warn("runtime: replica heartbeat", "err", err)
		}
	}
}

// heartbeatLoop beats until ctx ends.
func (r *Runtime) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.heartbeat(ctx)
			if r.bus.Load() != nil {
				r.stopCancelledElsewhere(ctx) // events_pg.go: a cancel whose event was lost
			}
		}
	}
}

// stopReplica marks this replica stopped on a graceful stop, so the others
// need not wait ReplicaDeadAfter to take over what it held, and gives up
// the leases it holds.
func (r *Runtime) stopReplica(ctx context.Context) {
	if !r.registered.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	now, err := r.dbNow(ctx)
	if err != nil {
		now = r.now()
	}
	if err := r.db.WithContext(ctx).Model(&models.Replica{}).Where("id = ?", r.replica.ID).Update("stopped_at", now).Error; err != nil {
		r.opts.Log.Warn("runtime: mark replica stopped", "replica", r.replica.ID, "err", err)
	}
	r.db.WithContext(ctx).Where("holder = ?", r.replica.ID).Delete(&models.Lease{})
}

// liveSince is the oldest heartbeat of a live replica, on the database's
// clock (dbclock.go).
func (r *Runtime) liveSince(ctx context.Context) (time.Time, error) {
	now, err := r.dbNow(ctx)
	return now.Add(-ReplicaDeadAfter), err
}

// ReplicaAlive tells whether replica id is alive (registered, not stopped,
// heartbeat within ReplicaDeadAfter) and the URL it advertises. An unknown
// id is dead, not an error.
func (r *Runtime) ReplicaAlive(ctx context.Context, id string) (url string, alive bool, err error) {
	var rows []models.Replica
	if err := r.db.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return "", false, fmt.Errorf("runtime: replica %s: %w", id, err)
	}
	if len(rows) == 0 {
		return "", false, nil
	}
	rep := rows[0]
	since, err := r.liveSince(ctx)
	if err != nil {
		return "", false, fmt.Errorf("runtime: replica %s: %w", id, err)
	}
	return rep.URL, rep.StoppedAt == nil && rep.HeartbeatAt.After(since), nil
}

// ReplicaView is one replica as the console and /readyz show it.
type ReplicaView struct {
	ID          string     `json:"id"`
	URL         string     `json:"url"`
	StartedAt   time.Time  `json:"started_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	StoppedAt   *time.Time `json:"stopped_at,omitempty"`
	Alive       bool       `json:"alive"`
	Self        bool       `json:"self"`
}

// Replicas lists the replicas known to the database, newest first (bounded).
func (r *Runtime) Replicas(ctx context.Context) ([]ReplicaView, error) {
	var rows []models.Replica
	if err := r.db.WithContext(ctx).Order("started_at DESC").Limit(200).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("runtime: replicas: %w", err)
	}
	since, err := r.liveSince(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime: replicas: %w", err)
	}
	out := make([]ReplicaView, 0, len(rows))
	for _, m := range rows {
		out = append(out, ReplicaView{ID: m.ID, URL: m.URL, StartedAt: m.StartedAt, HeartbeatAt: m.HeartbeatAt, StoppedAt: m.StoppedAt,
			Alive: m.StoppedAt == nil && m.HeartbeatAt.After(since), Self: m.ID == r.replica.ID})
	}
	return out, nil
}

// forgetReplicas removes rows of replicas dead for a week.
func (r *Runtime) forgetReplicas(ctx context.Context) {
	now, err := r.dbNow(ctx)
	if err != nil {
		return
	}
	r.db.WithContext(ctx).Where("heartbeat_at < ? AND id <> ?", now.Add(-replicaForgetAfter), r.replica.ID).Delete(&models.Replica{})
}
