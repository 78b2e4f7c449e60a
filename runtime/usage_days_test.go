package runtime

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// usagePeriods are the periods the rollup is checked over: open ends, whole
// days, a partial first and last day, less than a day, a day across
// midnight, an agent, and a period after every record.
var usagePeriods = []UsageFilter{
	{},
	{From: "2026-11-03"},
	{To: "2026-11-07"},
	{From: "2026-11-03", To: "2026-11-07"},
	{From: "2026-11-03T13:45:10Z", To: "2026-11-08T02:00:00Z"},
	{From: "2026-11-04T01:00:00Z", To: "2026-11-04T20:00:00Z"},
	{From: "2026-11-04T20:00:00Z", To: "2026-11-05T03:00:00Z"},
	{From: "2026-11-05T00:00:00Z", To: "2026-11-06T00:00:00Z"},
	{From: "2026-11-06T06:30:00Z"},
	{To: "2026-11-02T18:00:00Z"},
	{From: "2026-11-02T12:00:00Z", Agent: "agt_b"},
	{Agent: "agt_a", To: "2026-11-09T09:09:09Z"},
	{From: "2026-12-01"},
	{From: "2026-11-05T10:00:00Z", To: "2026-11-05T09:00:00Z"},
}

// checkUsageRollup compares what UsageGet answers (whole days from the
// rollup) with the sums of the period's records, for every period.
func checkUsageRollup(t *testing.T, rt *Runtime) {
	t.Helper()
	ctx := t.Context()
	for _, f := range usagePeriods {
		got, err := rt.UsageGet(ctx, System, f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		var from, to *time.Time
		q, err := rt.usageQuery(ctx, f, &from, &to)
		if err != nil {
			t.Fatal(err)
		}
		byKind, days, credits, err := rt.usageSums(ctx, q, false, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !near(got.Credits, credits) {
			t.Errorf("%+v: credits %v from the rollup, %v from the records", f, got.Credits, credits)
		}
		if spend, err := rt.UsageCredits(ctx, System, f); err != nil || spend != got.Credits {
			t.Errorf("%+v: UsageCredits %v (%v), Usage.get's credits %v", f, spend, err, got.Credits)
		}
		// The records' pages, followed to the end, list every record of the
		// period once, newest first, both ways: the period's start seeks the
		// records begun on its UTC day and those that crossed a midnight apart.
		var want []models.UsageRecord
		if err := q.Order("started_at DESC, id DESC").Find(&want).Error; err != nil {
			t.Fatal(err)
		}
		var listed, back []string
		pf := f
		pf.Limit = 37
		for n := 0; ; n++ {
			pg, err := rt.UsageGet(ctx, System, pf)
			if err != nil || n > 50 {
				t.Fatalf("%+v: page %d: %v", pf, n, err)
			}
			for _, r := range pg.Records {
				listed = append(listed, r.ID)
			}
			if pg.Next == "" {
				// Back from the last page to the first, through Newer.
				for m, prev := 0, pg.Prev; prev != ""; m++ {
					pf.Cursor = prev
					pg, err := rt.UsageGet(ctx, System, pf)
					if err != nil || m > 50 {
						t.Fatalf("%+v: page %d back: %v", pf, m, err)
					}
					var ids []string
					for _, r := range pg.Records {
						ids = append(ids, r.ID)
					}
					back, prev = append(ids, back...), pg.Prev
				}
				if want := listed[:len(listed)-len(pg.Records)]; !slices.Equal(back, want) {
					t.Errorf("%+v: back through Newer: %d records, not the %d before the last page", f, len(back), len(want))
				}
				break
			}
			pf.Cursor = pg.Next
		}
		if len(listed) != len(want) {
			t.Errorf("%+v: the pages list %d records, the period has %d", f, len(listed), len(want))
		}
		for i := range min(len(listed), len(want)) {
			if listed[i] != want[i].ID {
				t.Errorf("%+v: record %d listed is %s, want %s", f, i, listed[i], want[i].ID)
				break
			}
		}
		if len(got.Totals) != len(byKind) {
			t.Errorf("%+v: %d kinds from the rollup, %d from the records", f, len(got.Totals), len(byKind))
		}
		for _, g := range got.Totals {
			w := byKind[g.Kind]
			if w == nil || g.Records != w.Records || g.Unit != w.Unit || !near(g.Quantity, w.Quantity) || !near(g.Credits, w.Credits) {
				t.Errorf("%+v: %s totals %+v from the rollup, %+v from the records", f, g.Kind, g, w)
			}
		}
		if len(got.Days) != len(days) {
			t.Fatalf("%+v: %d days from the rollup, %d from the records", f, len(got.Days), len(days))
		}
		for i, d := range days {
			g := got.Days[i]
			if g.Day != d.Day || len(g.Credits) != len(d.Credits) {
				t.Errorf("%+v: day %+v from the rollup, %+v from the records", f, g, d)
				continue
			}
			for k, c := range d.Credits {
				if !near(g.Credits[k], c) {
					t.Errorf("%+v: %s %s credits %v from the rollup, %v from the records", f, d.Day, k, g.Credits[k], c)
				}
			}
		}
	}
}

// near: sums of the same floats in another order differ in the last bits.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }

// randomUsage is n records across ten days from 2026-11-01, of every kind and
// two agents: short function calls, machine runs of up to three hours,
// storage stretches, some across midnight and some of several days.
func randomUsage(seed uint64, n int) []Usage {
	rnd := rand.New(rand.NewPCG(seed, 7))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	kinds := []string{UsageFunctionSeconds, UsageMachineSeconds, UsageArchiveBytes, UsageVolumeBytes}
	var out []Usage
	for i := range n {
		kind := kinds[rnd.IntN(len(kinds))]
		start := base.Add(time.Duration(rnd.Int64N(int64(10 * 24 * time.Hour))))
		var d time.Duration
		switch {
		case i%17 == 0:
			d = time.Duration(rnd.Int64N(int64(72*time.Hour))) + 23*time.Hour
		case i%11 == 0:
			// From three hours to a little over a day: some within one day,
			// some across a midnight, some just under or over 23 and 24 hours.
			d = time.Duration(rnd.Int64N(int64(22*time.Hour))) + 3*time.Hour
		case kind == UsageFunctionSeconds:
			d = time.Duration(rnd.Int64N(int64(30 * time.Second)))
		default:
			d = time.Duration(rnd.Int64N(int64(3 * time.Hour)))
		}
		u := Usage{Kind: kind, SessionID: fmt.Sprintf("ses_%d", rnd.IntN(9)), AgentID: []string{"agt_a", "agt_b"}[rnd.IntN(2)],
			Subject: fmt.Sprintf("sub_%d", i), Start: start, End: start.Add(d)}
		switch kind {
		case UsageArchiveBytes, UsageVolumeBytes:
			u.Quantity, u.Unit = float64(rnd.IntN(5e9)), "byte"
		default:
			u.Quantity, u.Unit, u.Credits = d.Seconds(), "second", d.Seconds()*PriceMachineSecond
		}
		out = append(out, u)
	}
	return out
}

// The Usage page's totals and chart come from the per-day rollup for whole
// days and from the records for a partial first or last day: for random
// records across days, kinds and agents, over every kind of period, they
// equal the sums of the period's records (SQLite, PostgreSQL).
func TestUsageRollupEqualsRecordSums(t *testing.T) {
	db := modelstest.Open(t)
	rt := New(db, Options{})
	t.Cleanup(rt.Close)
	for _, u := range randomUsage(1, 400) {
		if err := rt.RecordUsage(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
	checkUsageRollup(t, rt)
}

// Migration 0028 fills the rollup from the records already there.
func TestUsageRollupMigrationBackfills(t *testing.T) {
	db := modelstest.Open(t)
	rt := New(db, Options{})
	t.Cleanup(rt.Close)
	for _, stmt := range []string{`DROP TABLE usage_days`, `DROP TABLE usage_long`, `DELETE FROM schema_migrations WHERE version IN (28, 37)`} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	for i, u := range randomUsage(2, 300) {
		rec := models.UsageRecord{ID: fmt.Sprintf("use_%04d", i), Kind: u.Kind, SessionID: u.SessionID, AgentID: u.AgentID, Subject: u.Subject,
			Quantity: u.Quantity, Unit: u.Unit, Credits: u.Credits, StartedAt: u.Start, EndedAt: u.End}
		if err := db.Create(&rec).Error; err != nil {
			t.Fatal(err)
		}
	}
	// 0028 builds the rollup, and 0037 adds the records that cross a midnight to usage_long.
	if ran, err := db.Migrate(); err != nil || !slices.Equal(ran, []int{28, 37}) {
		t.Fatalf("migrate: %v %v", ran, err)
	}
	checkUsageRollup(t, rt)
	// RollUpUsage rebuilds the same.
	if err := rt.RollUpUsage(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkUsageRollup(t, rt)
}

// Two replicas on one database recording usage at once into the same rows
// of the rollup lose nothing: the day's row counts every record and its
// totals equal the records' (SQLite, PostgreSQL).
func TestUsageRollupIsExactAcrossReplicas(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	var rts []*Runtime
	for i := range 2 {
		db, err := models.Open(dir, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if i == 0 {
			if _, err := db.Migrate(); err != nil {
				t.Fatal(err)
			}
		}
		rt := New(db, Options{})
		t.Cleanup(rt.Close)
		rts = append(rts, rt)
	}
	start := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	const writers, each = 24, 5
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				secs := float64(i*each+j) + 0.25
				err := rts[i%2].RecordUsage(context.Background(), Usage{Kind: UsageFunctionSeconds, SessionID: "ses_one", AgentID: "agt_a",
					Subject: fmt.Sprintf("call_%d_%d", i, j), Quantity: secs, Unit: "second", Credits: secs * PriceFunctionSecond,
					Start: start, End: start.Add(time.Duration(secs * float64(time.Second)))})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var rows []struct {
		Records  int
		Quantity float64
	}
	if err := rts[0].db.Raw(`SELECT records, quantity FROM usage_days`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	n := writers * each
	if want := float64(n*(n-1))/2 + 0.25*float64(n); len(rows) != 1 || rows[0].Records != n || !near(rows[0].Quantity, want) {
		t.Fatalf("rollup rows %+v, want one of %d records and %v seconds", rows, n, want)
	}
	checkUsageRollup(t, rts[1])
}
