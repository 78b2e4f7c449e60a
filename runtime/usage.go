package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Prices on Subako Cloud, in SC (Subako credits), from the product spec.
const (
	PriceFunctionSecond = 0.01       // per second a function call runs
	PriceMachineSecond  = 0.02777778 // per second a sandbox machine runs
)

// Usage kinds.
const (
	UsageFunctionSeconds = "function_seconds"
	UsageMachineSeconds  = "machine_seconds"
	UsageArchiveBytes    = "archive_bytes"
)

// Usage is one metered use, for the usage page and billing.
type Usage struct {
	Kind      string
	SessionID string
	AgentID   string
	Subject   string // the call, sandbox or archive it measures
	Quantity  float64
	Unit      string
	Credits   float64
	Start     time.Time
	End       time.Time
}

// RecordUsage stores one metered use. It is not a verb: the runtime meters
// what it ran, on nobody's request.
func (r *Runtime) RecordUsage(ctx context.Context, u Usage) error {
	rec := models.UsageRecord{ID: newID("use"), Kind: u.Kind, SessionID: u.SessionID, AgentID: u.AgentID, Subject: u.Subject,
		Quantity: u.Quantity, Unit: u.Unit, Credits: u.Credits, StartedAt: u.Start.UTC(), EndedAt: u.End.UTC()}
	if err := r.insertUsage(ctx, rec); err != nil {
		return fmt.Errorf("runtime: record usage: %w", err)
	}
	return nil
}

// UsageFilter narrows Usage.get; empty fields match everything. Times are RFC 3339.
type UsageFilter struct {
	From    string `query:"from" json:"from"`
	To      string `query:"to" json:"to"`
	Session string `query:"session" json:"session"`
	Agent   string `query:"agent" json:"agent"`
	// Cursor and Limit page the records (200 by default); totals and days
	// always cover the whole period.
	Cursor string `query:"cursor" json:"cursor"`
	Limit  int    `query:"limit" json:"limit"`
}

// UsageTotal sums one kind of usage.
type UsageTotal struct {
	Kind     string  `json:"kind"`
	Quantity float64 `json:"quantity"`
	Unit     string  `json:"unit"`
	Credits  float64 `json:"credits"`
	Records  int     `json:"records"`
}

// UsageRecordView is one metered use.
type UsageRecordView struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	// AgentName and SessionTitle are read when the report is made; empty
	// once the agent or session is gone.
	AgentName    string    `json:"agent_name"`
	SessionTitle string    `json:"session_title"`
	Subject      string    `json:"subject"`
	Quantity     float64   `json:"quantity"`
	Unit         string    `json:"unit"`
	Credits      float64   `json:"credits"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
}

// UsageReport is Usage.get's answer: totals by kind and the newest records.
type UsageReport struct {
	From    *time.Time        `json:"from"`
	To      *time.Time        `json:"to"`
	Credits float64           `json:"credits"`
	Totals  []UsageTotal      `json:"totals"`
	Records []UsageRecordView `json:"records"`
	// Days is the SC spent each day (UTC) by kind, oldest first.
	Days []UsageDay `json:"days"`
	// The cursors of the records' pages beside this one.
	PageLinks
}

// UsageGet is Usage.get: what was metered in a period, for a session or an agent.
func (r *Runtime) UsageGet(ctx context.Context, p Principal, f UsageFilter) (UsageReport, error) {
	out := UsageReport{Totals: []UsageTotal{}, Records: []UsageRecordView{}, Days: []UsageDay{}}
	err := r.run(ctx, p, "Usage.get", func(a *act) error {
		c, err := ParseCursor(f.Cursor)
		if err != nil {
			return err
		}
		limit, err := pageLimit(f.Limit, 200)
		if err != nil {
			return err
		}
		q, rolled, err := r.usageScoped(ctx, p, f, &out.From, &out.To)
		if err != nil {
			return err
		}
		if out.Records, out.PageLinks, err = r.usagePage(ctx, q, out.From, c, limit); err != nil {
			return err
		}
		byKind, days, credits, err := r.usageSums(ctx, q, rolled, f.Agent, out.From, out.To)
		if err != nil {
			return err
		}
		out.Days, out.Credits = days, credits
		// Known kinds first, in a fixed order; any other kind after them, by name.
		order := []string{UsageFunctionSeconds, UsageMachineSeconds, UsageArchiveBytes, UsageVolumeBytes}
		for _, k := range slices.Sorted(maps.Keys(byKind)) {
			if !slices.Contains(order, k) {
				order = append(order, k)
			}
		}
		for _, k := range order {
			if t := byKind[k]; t != nil {
				out.Totals = append(out.Totals, *t)
			}
		}
		return nil
	})
	return out, err
}

// UsageCredits is the SC a period cost, as Usage.get totals it, without
// reading its records: the Dashboard's spend today.
func (r *Runtime) UsageCredits(ctx context.Context, p Principal, f UsageFilter) (float64, error) {
	var credits float64
	err := r.run(ctx, p, "Usage.get", func(a *act) error {
		var from, to *time.Time
		q, rolled, err := r.usageScoped(ctx, p, f, &from, &to)
		if err != nil {
			return err
		}
		_, _, credits, err = r.usageSums(ctx, q, rolled, f.Agent, from, to)
		return err
	})
	return credits, err
}

// usageScoped is Usage.get's records for p under f, and whether their sums
// may come from the rollup, which knows days, kinds and agents: a session's
// few records, or those a scoped viewer sees, are summed from the records.
func (r *Runtime) usageScoped(ctx context.Context, p Principal, f UsageFilter, from, to **time.Time) (*gorm.DB, bool, error) {
	q, err := r.usageQuery(ctx, f, from, to)
	if err != nil {
		return nil, false, err
	}
	scope := r.listScope(p, "Usage.get")
	return scopeBySession(q, scope, "session_id"), scope.All && f.Session == "", nil
}

// totalOf is what a record adds to its kind's total. Archive records hold the
// archive's size over a stretch of time: summing sizes means nothing, so
// storage adds up in GB-hours.
func totalOf(u models.UsageRecord) (float64, string) {
	if u.Kind == UsageArchiveBytes || u.Kind == UsageVolumeBytes {
		return u.Quantity * u.EndedAt.Sub(u.StartedAt).Hours() / 1e9, "GB-hour"
	}
	return u.Quantity, u.Unit
}
