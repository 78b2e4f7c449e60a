package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/sandbox"
)

// archiveAccrualEvery is how often a kept archive's storage is written down
// while nothing else happens to it, so the usage page is never more than
// this far behind.
const archiveAccrualEvery = time.Hour

// sandboxUsage is the Manager's OnUsage, called at each suspension.
//
// Machine time becomes one record per run, start to suspension, priced at
// PriceMachineSecond. Archive storage becomes a series of records per
// sandbox, each the stretch [start, end) during which an archive of
// Quantity bytes was kept; the spec sets no storage price yet, so their
// Credits are 0 and the usage page can price byte-seconds later.
func (r *Runtime) sandboxUsage(u sandbox.UsageEvent) {
	ctx := context.Background()
	var err error
	switch u.Kind {
	case sandbox.UsageMachineSeconds:
		err = r.recordMachineTime(ctx, u)
	case sandbox.UsageArchiveBytes:
		err = r.archiveKept(ctx, u.SandboxID, u.SessionID, int64(u.Quantity), u.At.UTC())
	}
	if err != nil {
		r.opts.Log.Error("runtime: record sandbox usage", "sandbox", u.SandboxID, "kind", u.Kind, "err", err)
	}
}

func (r *Runtime) recordMachineTime(ctx context.Context, u sandbox.UsageEvent) error {
	rec, err := (sandboxStore{db: r.db}).Get(ctx, u.SandboxID)
	if err != nil {
		return err
	}
	start := rec.StartedAt.UTC()
	return r.RecordUsage(ctx, Usage{Kind: UsageMachineSeconds, SessionID: u.SessionID, AgentID: r.agentOf(ctx, u.SessionID),
		Subject: u.SandboxID, Quantity: u.Quantity, Unit: "second", Credits: u.Quantity * PriceMachineSecond,
		Start: start, End: start.Add(time.Duration(u.Quantity * float64(time.Second)))})
}

func (r *Runtime) agentOf(ctx context.Context, sessionID string) string {
	var agent string
	r.db.WithContext(ctx).Model(&models.Session{}).Where("id = ?", sessionID).Pluck("agent_id", &agent)
	return agent
}

// archiveKept records that, from at on, sandbox id's archive holds bytes
// (0 once deleted).
func (r *Runtime) archiveKept(ctx context.Context, id, sessionID string, bytes int64, at time.Time) error {
	return r.storageKept(ctx, UsageArchiveBytes, id, sessionID, r.agentOf(ctx, sessionID), bytes, at)
}

// storageKept records that, from at on, subject (an archive, a volume)
// holds bytes (0 once deleted): it closes the stretch of the previous size,
// then opens one for the new size with a zero-length record that the next
// accrual extends from.
func (r *Runtime) storageKept(ctx context.Context, kind, subject, sessionID, agentID string, bytes int64, at time.Time) error {
	last, err := r.lastStorageUsage(ctx, kind, subject)
	if err != nil {
		return err
	}
	if last != nil {
		if err := r.accrueStorage(ctx, *last, at); err != nil {
			return err
		}
		if int64(last.Quantity) == bytes {
			return nil
		}
	} else if bytes == 0 {
		return nil
	}
	return r.RecordUsage(ctx, Usage{Kind: kind, SessionID: sessionID, AgentID: agentID,
		Subject: subject, Quantity: float64(bytes), Unit: "byte", Start: at, End: at})
}

// lastStorageWhere and lastStorageOrder find a thing's last storage record
// through the partial index usage_records_storage (migration 0033), whose
// condition the query has to name literally for the index to be used
// (TestLastStorageUsageReadsItsIndex).
const (
	lastStorageWhere = "kind IN ('" + UsageArchiveBytes + "', '" + UsageVolumeBytes + "') AND kind = ? AND subject = ?"
	lastStorageOrder = "ended_at DESC, started_at DESC"
)

func (r *Runtime) lastStorageUsage(ctx context.Context, kind, subject string) (*models.UsageRecord, error) {
	var last models.UsageRecord
	err := r.db.WithContext(ctx).Where(lastStorageWhere, kind, subject).Order(lastStorageOrder).First(&last).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: last %s usage of %s: %w", kind, subject, err)
	}
	return &last, nil
}

// accrueStorage writes down the storage of last's size from where it ended
// until until; nothing when the thing stored was deleted (size 0).
func (r *Runtime) accrueStorage(ctx context.Context, last models.UsageRecord, until time.Time) error {
	if last.Quantity == 0 || !until.After(last.EndedAt) {
		return nil
	}
	return r.RecordUsage(ctx, Usage{Kind: last.Kind, SessionID: last.SessionID, AgentID: last.AgentID,
		Subject: last.Subject, Quantity: last.Quantity, Unit: "byte", Start: last.EndedAt, End: until})
}

// accrueArchives extends the storage records of every kept archive whose
// last record is at least every old.
func (r *Runtime) accrueArchives(ctx context.Context, every time.Duration) error {
	var ids []string
	if err := r.db.WithContext(ctx).Model(&models.Sandbox{}).Where("archive_at IS NOT NULL").Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("runtime: sandboxes with archives: %w", err)
	}
	now := r.now()
	var errs []error
	for _, id := range ids {
		last, err := r.lastStorageUsage(ctx, UsageArchiveBytes, id)
		if err != nil || last == nil || now.Sub(last.EndedAt) < every {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, r.accrueStorage(ctx, *last, now))
	}
	return errors.Join(errs...)
}
