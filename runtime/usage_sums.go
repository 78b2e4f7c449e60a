package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// usageSums adds up what q selects in the database, by kind and by UTC day,
// so a report reads a few rows however many records the period holds.
// Archive records hold a size over a stretch of time: they add up in
// GB-hours, as totalOf says.
func (r *Runtime) usageSums(ctx context.Context, q *gorm.DB) (map[string]*UsageTotal, []UsageDay, float64, error) {
	// Whole seconds are plenty for archive stretches of minutes to hours,
	// and exact on both databases.
	secs, day := "(strftime('%s', ended_at) - strftime('%s', started_at))", "date(started_at)"
	if r.db.Dialect == models.Postgres {
		secs, day = "EXTRACT(EPOCH FROM (ended_at - started_at))", "to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	var kinds []struct {
		Kind, Unit                     string
		Quantity, ByteSeconds, Credits float64
		Records                        int
	}
	err := q.Session(&gorm.Session{}).Select("kind, MAX(unit) AS unit, SUM(quantity) AS quantity, SUM(quantity * " + secs +
		") AS byte_seconds, SUM(credits) AS credits, COUNT(*) AS records").Group("kind").Scan(&kinds).Error
	if err != nil {
		return nil, nil, 0, fmt.Errorf("runtime: usage totals: %w", err)
	}
	byKind, credits := map[string]*UsageTotal{}, 0.0
	for _, k := range kinds {
		t := &UsageTotal{Kind: k.Kind, Quantity: k.Quantity, Unit: k.Unit, Credits: k.Credits, Records: k.Records}
		if k.Kind == UsageArchiveBytes || k.Kind == UsageVolumeBytes {
			t.Quantity, t.Unit = k.ByteSeconds/3600/1e9, "GB-hour"
		}
		byKind[k.Kind] = t
		credits += k.Credits
	}
	var rows []struct {
		Day, Kind string
		Credits   float64
	}
	err = q.Session(&gorm.Session{}).Select(day + " AS day, kind, SUM(credits) AS credits").Group(day + ", kind").Scan(&rows).Error
	if err != nil {
		return nil, nil, 0, fmt.Errorf("runtime: usage days: %w", err)
	}
	byDay := map[string]map[string]float64{}
	for _, row := range rows {
		if byDay[row.Day] == nil {
			byDay[row.Day] = map[string]float64{}
		}
		byDay[row.Day][row.Kind] += row.Credits
	}
	days := make([]UsageDay, 0, len(byDay))
	for _, d := range slices.Sorted(maps.Keys(byDay)) {
		days = append(days, UsageDay{Day: d, Credits: byDay[d]})
	}
	return byKind, days, credits, nil
}
