package runtime

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// usageSlots is how many rows of usage_days one day, kind and agent spread
// over, so that records written at once by many sessions do not all wait on
// one row's lock.
const usageSlots = 4

// listedLong says whether a record goes into usage_long: it crosses a UTC
// midnight. So a record that began before the UTC day of a period's start
// (usageDayOf) and ends within the period is there, and a period's first
// records are found without reading the days before it. (Migration 0028
// listed the records of 23 hours or more; those within one day are still
// there, which changes nothing.)
func listedLong(start, end time.Time) bool { return usageDayOf(start) != usageDayOf(end) }

// usageDayOf is the UTC midnight at or before t.
func usageDayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// usageSlot is the usage_days slot of a session's records.
func usageSlot(sessionID string) int {
	h := fnv.New32a()
	h.Write([]byte(sessionID))
	return int(h.Sum32() % usageSlots)
}

// usageExprs are the dialect's SQL for a record's UTC day and its length in
// seconds (whole seconds on SQLite: plenty for archive stretches of minutes
// to hours, and exact on both databases).
func (r *Runtime) usageExprs() (day, secs string) {
	if r.db.Dialect == models.Postgres {
		return "to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')", "EXTRACT(EPOCH FROM (ended_at - started_at))"
	}
	return "date(started_at)", "(strftime('%s', ended_at) - strftime('%s', started_at))"
}

// insertUsage writes rec, adds it to its day's row of usage_days (one
// conditional upsert, exact however many replicas write at once) and, when
// it crosses a UTC midnight, lists it in usage_long;
// all in one transaction, so the rollup never disagrees with the records.
func (r *Runtime) insertUsage(ctx context.Context, rec models.UsageRecord) error {
	day, secs := r.usageExprs()
	return r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&rec).Error; err != nil {
			return err
		}
		// The upsert reads the row just written, so the day and seconds are
		// those the page's own sums compute from it.
		err := tx.Exec(`INSERT INTO usage_days (day, kind, agent_id, slot, unit, quantity, byte_seconds, credits, records)
SELECT `+day+`, kind, agent_id, ?, unit, quantity, quantity * `+secs+`, credits, 1 FROM usage_records WHERE id = ?
ON CONFLICT (day, kind, agent_id, slot) DO UPDATE SET quantity = usage_days.quantity + excluded.quantity,
	byte_seconds = usage_days.byte_seconds + excluded.byte_seconds, credits = usage_days.credits + excluded.credits,
	records = usage_days.records + excluded.records,
	unit = CASE WHEN excluded.unit > usage_days.unit THEN excluded.unit ELSE usage_days.unit END`,
			usageSlot(rec.SessionID), rec.ID).Error
		if err != nil {
			return err
		}
		if listedLong(rec.StartedAt, rec.EndedAt) {
			return tx.Exec(`INSERT INTO usage_long (record_id, ended_at) VALUES (?, ?)`, rec.ID, rec.EndedAt).Error
		}
		return nil
	})
}

// RollUpUsage rebuilds usage_days and usage_long from every usage record, as
// migration 0028 first filled them: for records written into the database
// some other way than RecordUsage (a test's seed, an import).
func (r *Runtime) RollUpUsage(ctx context.Context) error {
	day, secs := r.usageExprs()
	// As listedLong: across a UTC midnight.
	long := "date(started_at) <> date(ended_at)"
	if r.db.Dialect == models.Postgres {
		long = "(started_at AT TIME ZONE 'UTC')::date <> (ended_at AT TIME ZONE 'UTC')::date"
	}
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, stmt := range []string{
			`DELETE FROM usage_days`,
			`DELETE FROM usage_long`,
			`INSERT INTO usage_days (day, kind, agent_id, slot, unit, quantity, byte_seconds, credits, records)
SELECT ` + day + `, kind, agent_id, 0, MAX(unit), SUM(quantity), SUM(quantity * ` + secs + `), SUM(credits), COUNT(*)
FROM usage_records GROUP BY ` + day + `, kind, agent_id`,
			`INSERT INTO usage_long (record_id, ended_at) SELECT id, ended_at FROM usage_records WHERE ` + long,
		} {
			if err := tx.Exec(stmt).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("runtime: roll up usage: %w", err)
	}
	return nil
}

// usageSum is what one kind added up to on one day.
type usageSum struct {
	Day, Kind, Unit                string
	Quantity, ByteSeconds, Credits float64
	Records                        int
}

// usageSums adds up the usage of q's period by kind and by UTC day, so a
// report reads a few rows however many records the period holds. Archive
// and volume records hold a size over a stretch of time: they add up in
// GB-hours, as totalOf says.
//
// When rolled is true (q filters by period and agent only) the whole days of
// the period come from usage_days, and only the records of a partial first
// or last day are read: those that began on from's UTC day before the first
// midnight after from, those that began after the last midnight before to,
// and those of usage_long that began before from's day and end within the
// period (a record not there that began before from's day ended before
// it). Otherwise q's records are summed.
func (r *Runtime) usageSums(ctx context.Context, q *gorm.DB, rolled bool, agent string, from, to *time.Time) (map[string]*UsageTotal, []UsageDay, float64, error) {
	var sums []usageSum
	add := func(q *gorm.DB) error {
		day, secs := r.usageExprs()
		var part []usageSum
		err := q.Session(&gorm.Session{}).Select(day + " AS day, kind, MAX(unit) AS unit, SUM(quantity) AS quantity, SUM(quantity * " + secs +
			") AS byte_seconds, SUM(credits) AS credits, COUNT(*) AS records").Group(day + ", kind").Scan(&part).Error
		sums = append(sums, part...)
		return err
	}
	if !rolled {
		if err := add(q); err != nil {
			return nil, nil, 0, fmt.Errorf("runtime: usage totals: %w", err)
		}
		return usageTotals(sums)
	}
	const dayLayout = "2006-01-02"
	// The whole days [lo, hi): lo the first midnight at or after from, hi
	// the last midnight at or before to; empty strings are unbounded.
	var lo, hi string
	if from != nil {
		d := usageDayOf(*from)
		if d.Before(*from) {
			d = d.Add(24 * time.Hour)
		}
		lo = d.Format(dayLayout)
	}
	if to != nil {
		hi = usageDayOf(*to).Format(dayLayout)
	}
	whole := lo == "" || hi == "" || lo < hi
	if whole {
		rq := r.db.WithContext(ctx).Table("usage_days").Select("day, kind, MAX(unit) AS unit, SUM(quantity) AS quantity, " +
			"SUM(byte_seconds) AS byte_seconds, SUM(credits) AS credits, SUM(records) AS records").Group("day, kind")
		if lo != "" {
			rq = rq.Where("day >= ?", lo)
		}
		if hi != "" {
			rq = rq.Where("day < ?", hi)
		}
		if agent != "" {
			rq = rq.Where("agent_id = ?", agent)
		}
		var part []usageSum
		if err := rq.Scan(&part).Error; err != nil {
			return nil, nil, 0, fmt.Errorf("runtime: usage days: %w", err)
		}
		sums = append(sums, part...)
	}
	day := func(s string) time.Time { t, _ := time.Parse(dayLayout, s); return t }
	// The records' parts carry the period's bounds themselves, each range
	// of started_at with one lower and one upper bound: given q's bounds as
	// well, SQLite may seek on q's wider ones and read the whole period.
	base := r.db.WithContext(ctx).Model(&models.UsageRecord{})
	if agent != "" {
		base = base.Where("agent_id = ?", agent)
	}
	if from != nil {
		base = base.Where("ended_at >= ?", *from)
	}
	between := func(lo time.Time, hi *time.Time) *gorm.DB {
		q := base.Session(&gorm.Session{}).Where("started_at >= ?", lo)
		if hi != nil {
			q = q.Where("started_at < ?", *hi)
		}
		return q
	}
	var parts []*gorm.DB
	switch {
	case !whole:
		// Less than a whole day between from and to: their records.
		parts = append(parts, between(usageDayOf(*from), to))
	default:
		if from != nil {
			end := day(lo)
			if to != nil && to.Before(end) {
				end = *to
			}
			// Nothing to read when from is a midnight: the rollup has its day.
			if start := usageDayOf(*from); start.Before(end) {
				parts = append(parts, between(start, &end))
			}
		}
		if to != nil {
			parts = append(parts, between(day(hi), to))
		}
	}
	if from != nil {
		end := usageDayOf(*from)
		if to != nil && to.Before(end) {
			end = *to
		}
		parts = append(parts, base.Session(&gorm.Session{}).Where("started_at < ? AND id IN (SELECT record_id FROM usage_long WHERE ended_at >= ?)",
			end, *from))
	}
	for _, p := range parts {
		if err := add(p); err != nil {
			return nil, nil, 0, fmt.Errorf("runtime: usage totals: %w", err)
		}
	}
	return usageTotals(sums)
}

// usageTotals gathers sums by kind and by day.
func usageTotals(sums []usageSum) (map[string]*UsageTotal, []UsageDay, float64, error) {
	byKind, byteSecs, credits := map[string]*UsageTotal{}, map[string]float64{}, 0.0
	byDay := map[string]map[string]float64{}
	for _, s := range sums {
		t := byKind[s.Kind]
		if t == nil {
			t = &UsageTotal{Kind: s.Kind}
			byKind[s.Kind] = t
		}
		t.Quantity += s.Quantity
		t.Unit = max(t.Unit, s.Unit)
		t.Credits += s.Credits
		t.Records += s.Records
		byteSecs[s.Kind] += s.ByteSeconds
		credits += s.Credits
		if byDay[s.Day] == nil {
			byDay[s.Day] = map[string]float64{}
		}
		byDay[s.Day][s.Kind] += s.Credits
	}
	for k, t := range byKind {
		if k == UsageArchiveBytes || k == UsageVolumeBytes {
			t.Quantity, t.Unit = byteSecs[k]/3600/1e9, "GB-hour"
		}
	}
	days := make([]UsageDay, 0, len(byDay))
	for _, d := range slices.Sorted(maps.Keys(byDay)) {
		days = append(days, UsageDay{Day: d, Credits: byDay[d]})
	}
	return byKind, days, credits, nil
}
