package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Usage counted against a permission's limit (limits.go decides what to
// take; this file takes it). One row of limit_usage per permission, holder
// and period; a unit is taken by one conditional statement, an upsert whose
// update only happens while the row is under its limit, so two goroutines or
// two replicas never both take the last unit: the database serialises the
// statements on the row and the loser's condition is false (0 rows).

// Limit periods, each starting at a UTC boundary: the hour, midnight, Monday
// midnight, the first of the month.
const (
	PeriodHour  = "hour"
	PeriodDay   = "day"
	PeriodWeek  = "week"
	PeriodMonth = "month"
)

// periodBounds is the UTC period holding t: when it started and when the
// next one starts (when a count resets).
func periodBounds(period string, t time.Time) (start, next time.Time, err error) {
	t = t.UTC()
	switch period {
	case PeriodHour:
		start = t.Truncate(time.Hour)
		return start, start.Add(time.Hour), nil
	case PeriodDay:
		start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1), nil
	case PeriodWeek:
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		start = day.AddDate(0, 0, -back)
		return start, start.AddDate(0, 0, 7), nil
	case PeriodMonth:
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0), nil
	}
	return t, t, fmt.Errorf("runtime: unknown limit period %q", period)
}

// spendHolder keys a holder's spend row apart from its count row: a count
// per week and a spend per day can start at the same instant (a Monday).
func spendHolder(holder string) string { return "sc:" + holder }

// takeUnits takes n units of a count limit (limit a period) for holder;
// ok is false when the period's units are all taken. tx may be nil.
func (r *Runtime) takeUnits(ctx context.Context, tx *gorm.DB, permissionID, holder string, start time.Time, n, limit int) (bool, error) {
	if tx == nil {
		tx = r.db.DB
	}
	if n > limit {
		return false, nil
	}
	res := tx.WithContext(ctx).Exec(`INSERT INTO limit_usage (permission_id, holder_id, period_start, used, spent_sc) VALUES (?, ?, ?, ?, 0)
ON CONFLICT (permission_id, holder_id, period_start) DO UPDATE SET used = limit_usage.used + excluded.used
WHERE limit_usage.used + excluded.used <= ?`, permissionID, holder, start, n, limit)
	if res.Error != nil {
		return false, fmt.Errorf("runtime: take limit: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// takeSpend adds cost SC to holder's spend of the day starting at start,
// when it stays within ceiling; ok is false otherwise. tx may be nil.
func (r *Runtime) takeSpend(ctx context.Context, tx *gorm.DB, permissionID, holder string, start time.Time, cost, ceiling float64) (bool, error) {
	if tx == nil {
		tx = r.db.DB
	}
	if cost > ceiling {
		return false, nil
	}
	res := tx.WithContext(ctx).Exec(`INSERT INTO limit_usage (permission_id, holder_id, period_start, used, spent_sc) VALUES (?, ?, ?, 1, ?)
ON CONFLICT (permission_id, holder_id, period_start) DO UPDATE SET used = limit_usage.used + 1, spent_sc = limit_usage.spent_sc + excluded.spent_sc
WHERE limit_usage.spent_sc + excluded.spent_sc <= ?`, permissionID, spendHolder(holder), start, cost, ceiling)
	if res.Error != nil {
		return false, fmt.Errorf("runtime: take spend: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// LimitUse is how much of one limit a holder has used in the current period.
type LimitUse struct {
	Used    int       `json:"used"`
	SpentSC float64   `json:"spent_sc"`
	Resets  time.Time `json:"resets"`
}

// limitUsed reads holder's use of a permission's limit in the period holding now.
func (r *Runtime) limitUsed(ctx context.Context, permissionID, holder, period string, now time.Time) (LimitUse, error) {
	start, next, err := periodBounds(period, now)
	if err != nil {
		return LimitUse{}, err
	}
	var u models.LimitUsage
	err = r.db.WithContext(ctx).Where("permission_id = ? AND holder_id = ? AND period_start = ?", permissionID, holder, start).Limit(1).Find(&u).Error
	return LimitUse{Used: u.Used, SpentSC: u.SpentSC, Resets: next}, err
}

// limitUsageKept is how long a period's counts are kept after it started:
// past the longest period (a month), nothing reads them.
const limitUsageKept = 35 * 24 * time.Hour

// limitSweeps remembers, per Runtime, when old counts were last removed.
var limitSweeps sync.Map // *Runtime → time.Time

// sweepLimitUsage removes the counts of periods long over, at most once an
// hour per Runtime, beside a limited call (the table stays as small as the
// limits in use this month).
func (r *Runtime) sweepLimitUsage(ctx context.Context, now time.Time) {
	if last, ok := limitSweeps.Load(r); ok && now.Sub(last.(time.Time)) < time.Hour {
		return
	}
	limitSweeps.Store(r, now)
	res := r.db.WithContext(context.WithoutCancel(ctx)).Where("period_start < ?", now.Add(-limitUsageKept)).Delete(&models.LimitUsage{})
	if res.Error != nil {
		r.opts.Log.Error("runtime: sweep limit usage", "err", res.Error)
	}
}
