package runtime

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// UsageDay is the SC spent on one day (UTC, 2026-11-02), by usage kind.
type UsageDay struct {
	Day     string             `json:"day"`
	Credits map[string]float64 `json:"credits"`
}

// usageQuery applies Usage.get's filters; from and to receive the parsed
// bounds. A bad time is refused naming its field before anything is read.
func (r *Runtime) usageQuery(ctx context.Context, f UsageFilter, from, to **time.Time) (*gorm.DB, error) {
	q := r.db.WithContext(ctx).Model(&models.UsageRecord{})
	for _, b := range []struct {
		field, value, cond string
		into               **time.Time
	}{{"from", f.From, "ended_at >= ?", from}, {"to", f.To, "started_at < ?", to}} {
		if b.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, b.value)
		if err != nil {
			if t, err = time.Parse("2006-01-02", b.value); err != nil {
				return nil, invalid(b.field, "invalid_time", b.field+" must be a date (2026-11-29) or an RFC 3339 time")
			}
			if b.field == "to" {
				// A day given as the end of a period is part of it, as
				// people read "from the 1st to the 1st".
				t = t.AddDate(0, 0, 1)
			}
		}
		// SQLite compares timestamps as text: a time with another offset
		// must be given in UTC, as they are stored.
		t = t.UTC()
		*b.into = &t
		q = q.Where(b.cond, t)
	}
	if f.Session != "" {
		q = q.Where("session_id = ?", f.Session)
	}
	if f.Agent != "" {
		q = q.Where("agent_id = ?", f.Agent)
	}
	return q, nil
}

func usageRecordView(u models.UsageRecord) UsageRecordView {
	return UsageRecordView{ID: u.ID, Kind: u.Kind, Session: u.SessionID, Agent: u.AgentID,
		Subject: u.Subject, Quantity: u.Quantity, Unit: u.Unit, Credits: u.Credits, StartedAt: u.StartedAt, EndedAt: u.EndedAt}
}

// usageDays sums credits by the UTC day a use started, oldest day first.
func usageDays(recs []models.UsageRecord) []UsageDay {
	byDay := map[string]map[string]float64{}
	for _, u := range recs {
		d := u.StartedAt.UTC().Format("2006-01-02")
		if byDay[d] == nil {
			byDay[d] = map[string]float64{}
		}
		byDay[d][u.Kind] += u.Credits
	}
	out := make([]UsageDay, 0, len(byDay))
	for _, d := range slices.Sorted(maps.Keys(byDay)) {
		out = append(out, UsageDay{Day: d, Credits: byDay[d]})
	}
	return out
}

// nameUsage fills in the agents' names and sessions' titles, in two reads.
func (r *Runtime) nameUsage(ctx context.Context, recs []UsageRecordView) error {
	agentIDs, sessionIDs := map[string]bool{}, map[string]bool{}
	for _, u := range recs {
		agentIDs[u.Agent], sessionIDs[u.Session] = true, true
	}
	var agents []models.Agent
	if err := r.db.WithContext(ctx).Select("id", "name").Where("id IN ?", slices.Collect(maps.Keys(agentIDs))).Find(&agents).Error; err != nil {
		return fmt.Errorf("runtime: usage agents: %w", err)
	}
	var sessions []models.Session
	if err := r.db.WithContext(ctx).Select("id", "title").Where("id IN ?", slices.Collect(maps.Keys(sessionIDs))).Find(&sessions).Error; err != nil {
		return fmt.Errorf("runtime: usage sessions: %w", err)
	}
	names, titles := map[string]string{}, map[string]string{}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	for _, s := range sessions {
		titles[s.ID] = s.Title
	}
	for i := range recs {
		recs[i].AgentName, recs[i].SessionTitle = names[recs[i].Agent], titles[recs[i].Session]
	}
	return nil
}

// usageCSVBatch is how many records the export reads at a time, so memory
// stays bounded however many there are.
const usageCSVBatch = 500

// UsageCSV is Usage.get as CSV: every record the filter selects, newest
// first, with names beside ids. A bad filter is refused before anything is
// written, so the caller can still answer with an error.
func (r *Runtime) UsageCSV(ctx context.Context, p Principal, f UsageFilter, w io.Writer) error {
	return r.run(ctx, p, "Usage.get", func(a *act) error {
		var from, to *time.Time
		q, _, err := r.usageScoped(ctx, p, f, &from, &to)
		if err != nil {
			return err
		}
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"id", "kind", "agent", "agent_name", "session", "session_title", "subject", "quantity", "unit", "credits", "started_at", "ended_at"})
		// Pages follow the last row's (started_at, id), not an offset, so a
		// record metered meanwhile neither repeats nor hides a line; each page
		// is a seek in the records' (started_at, id) index, as the list's are,
		// so the export costs as many records as it writes.
		var last Cursor
		for {
			var recs []models.UsageRecord
			if err := r.usageRecords(ctx, q, from, last, usageCSVBatch-1).Find(&recs).Error; err != nil {
				return fmt.Errorf("runtime: usage csv: %w", err)
			}
			views := make([]UsageRecordView, len(recs))
			for i, u := range recs {
				views[i] = usageRecordView(u)
			}
			if err := r.nameUsage(ctx, views); err != nil {
				return err
			}
			for _, u := range views {
				_ = cw.Write([]string{u.ID, u.Kind, u.Agent, csvText(u.AgentName), u.Session, csvText(u.SessionTitle), csvText(u.Subject),
					strconv.FormatFloat(u.Quantity, 'f', -1, 64), u.Unit, strconv.FormatFloat(u.Credits, 'f', -1, 64),
					u.StartedAt.UTC().Format(time.RFC3339), u.EndedAt.UTC().Format(time.RFC3339)})
			}
			cw.Flush()
			if err := cw.Error(); err != nil {
				return fmt.Errorf("runtime: usage csv: %w", err)
			}
			if len(recs) < usageCSVBatch {
				return nil
			}
			last = Cursor{At: recs[len(recs)-1].StartedAt, ID: recs[len(recs)-1].ID}
		}
	})
}

// csvText keeps a typed name from being read as a formula by a spreadsheet
// (a session titled "=HYPERLINK(...)"), as OWASP advises: a leading quote.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
