package runtime

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// Lists are read a page at a time by cursor over (time, id): each page is one
// indexed seek plus one read per kind of name it shows, never one per row.

// SessionPage is one page of Session.list.
type SessionPage struct {
	Items []SessionView `json:"items"`
	PageLinks
}

// sessionListRow is a session with the names its row shows, in one read.
type sessionListRow struct {
	models.Session
	AgentName     string
	VersionNumber int
}

// SessionListPage is Session.list by cursor, newest first; f.Limit defaults
// to def.
func (r *Runtime) SessionListPage(ctx context.Context, p Principal, f SessionFilter, def int) (SessionPage, error) {
	out := SessionPage{Items: []SessionView{}}
	err := r.run(ctx, p, "Session.list", func(a *act) error {
		c, err := ParseCursor(f.Cursor)
		if err != nil {
			return err
		}
		limit, err := pageLimit(f.Limit, def)
		if err != nil {
			return err
		}
		q := r.db.WithContext(ctx).Table("sessions AS s").
			Select("s.*, COALESCE(g.name, '') AS agent_name, COALESCE(v.number, 0) AS version_number").
			Joins("LEFT JOIN agents g ON g.id = s.agent_id").
			Joins("LEFT JOIN versions v ON v.id = s.version_id")
		q = r.sessionsWhere(q, p, f)
		var rows []sessionListRow
		if err := keyset(q, "s.created_at", "s.id", c, true, limit).Scan(&rows).Error; err != nil {
			return fmt.Errorf("runtime: list sessions: %w", err)
		}
		rows, out.PageLinks = pageOf(rows, c, limit, func(s sessionListRow) (time.Time, string) { return s.CreatedAt, s.ID })
		ids := make([]string, len(rows))
		for i, s := range rows {
			ids[i] = s.ID
		}
		vaults, err := r.sessionsVaults(ctx, ids)
		if err != nil {
			return err
		}
		for _, s := range rows {
			v := sessionView(s.Session, vaults[s.ID])
			v.AgentName, v.VersionNumber = s.AgentName, s.VersionNumber
			out.Items = append(out.Items, v)
		}
		return nil
	})
	return out, err
}

// SessionCount is how many sessions Session.list would list with f's agent
// and state: the Dashboard's figure, counted through the list's index
// rather than read a page at a time.
func (r *Runtime) SessionCount(ctx context.Context, p Principal, f SessionFilter) (int, error) {
	var n int64
	err := r.run(ctx, p, "Session.list", func(a *act) error {
		return r.sessionsWhere(r.db.WithContext(ctx).Table("sessions AS s"), p, f).Count(&n).Error
	})
	return int(n), err
}

// sessionsWhere narrows q (sessions AS s) to f's agent and state among the
// sessions p may list.
func (r *Runtime) sessionsWhere(q *gorm.DB, p Principal, f SessionFilter) *gorm.DB {
	if f.Agent != "" {
		q = q.Where("s.agent_id = ?", f.Agent)
	}
	if f.State != "" {
		q = q.Where("s.state = ?", f.State)
	}
	return scopeSessions(q, r.listScope(p, "Session.list"), "s.")
}

// sessionsVaults reads the vaults of many sessions in one query, each
// session's in its order.
func (r *Runtime) sessionsVaults(ctx context.Context, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var svs []models.SessionVault
	if err := r.db.WithContext(ctx).Where("session_id IN ?", ids).Order("session_id, position").Find(&svs).Error; err != nil {
		return nil, fmt.Errorf("runtime: session vaults: %w", err)
	}
	for _, sv := range svs {
		out[sv.SessionID] = append(out[sv.SessionID], sv.VaultID)
	}
	return out, nil
}

// ActionPage is one page of Action.list.
type ActionPage struct {
	Items []ActionView `json:"items"`
	PageLinks
}

// ActionListPage is Action.list by cursor (f.Cursor), newest first; f.Before
// (an action's id) still starts the list after that action.
func (r *Runtime) ActionListPage(ctx context.Context, p Principal, f ActionFilter) (ActionPage, error) {
	out := ActionPage{Items: []ActionView{}}
	err := r.run(ctx, p, "Action.list", func(a *act) error {
		if f.Verdict != "" && f.Verdict != VerdictAllowed && f.Verdict != VerdictRefused && f.Verdict != VerdictFailed {
			return invalid("verdict", "invalid_verdict", "verdict must be allowed, refused or failed")
		}
		c, err := ParseCursor(f.Cursor)
		if err != nil {
			return err
		}
		// Action.list has always taken any limit, answering 100 for one out of range.
		limit := f.Limit
		if limit <= 0 || limit > MaxPageSize {
			limit = 100
		}
		if c.IsZero() && f.Before != "" {
			var b models.Action
			if err := r.db.WithContext(ctx).First(&b, "id = ?", f.Before).Error; err == nil {
				c = Cursor{At: b.CreatedAt, ID: b.ID}
			}
		}
		var recs []models.Action
		if err := r.actionListQuery(ctx, p, f, c, limit).Find(&recs).Error; err != nil {
			return fmt.Errorf("runtime: list actions: %w", err)
		}
		recs, out.PageLinks = pageOf(recs, c, limit, func(a models.Action) (time.Time, string) { return a.CreatedAt, a.ID })
		for _, rec := range recs {
			out.Items = append(out.Items, actionView(rec))
		}
		return nil
	})
	return out, err
}

// actionListQuery reads one page of Action.list after c, newest first.
func (r *Runtime) actionListQuery(ctx context.Context, p Principal, f ActionFilter, c Cursor, limit int) *gorm.DB {
	// filtered is the list's query but for the person filter, which
	// byFilter splits in two.
	filtered := func() *gorm.DB {
		q := r.db.WithContext(ctx).Model(&models.Action{})
		if f.Verb != "" {
			q = q.Where("verb = ?", f.Verb)
		}
		if f.Verdict != "" {
			q = q.Where("verdict = ?", f.Verdict)
		}
		if f.Parent != "" {
			q = q.Where("parent_id = ? AND parent_id <> ''", f.Parent) // the partial index actions_parent
		}
		if f.Changes {
			q = q.Where("verb NOT IN ?", readOnlyVerbs())
		}
		return scopeActions(q, r.listScope(p, "Action.list"))
	}
	q := filtered()
	if f.By != "" {
		q = r.db.WithContext(ctx).Model(&models.Action{}).Where("id IN (?)", byFilter(r.db.WithContext(ctx), filtered, f.By, c, limit))
	}
	return keyset(q, "created_at", "id", c, true, limit)
}

// byFilter is the ids of Action.list's page of Actions by one person (by):
// those whose by_id is by, and those of every caller but sessions whose
// by_label (a person's email) is by, each half through its own index
// (migration 0036).
func byFilter(db *gorm.DB, filtered func() *gorm.DB, by string, c Cursor, limit int) *gorm.DB {
	// The literal by_kind condition lets SQLite use the partial actions_label_page.
	return keysetUnion(db, "created_at", "id", c, true, limit,
		filtered().Where("by_id = ?", by), filtered().Where("by_label = ? AND by_kind <> 'session'", by))
}

// usageRecords reads one page of q's records after c, newest first; from is
// the period's start, which q holds as ended_at >= from. That condition does
// not say where in the (started_at, id) index the walk may stop, so a period
// with few records read back through the whole history. A record that ended
// after from began on from's UTC day or later, unless it crossed a
// midnight, and those are kept in usage_long (as usageSums counts them):
// each of the two is read in order, at most a page.
func (r *Runtime) usageRecords(ctx context.Context, q *gorm.DB, from *time.Time, c Cursor, limit int) *gorm.DB {
	if from == nil {
		return keyset(q.Session(&gorm.Session{}), "started_at", "id", c, true, limit)
	}
	recent := q.Session(&gorm.Session{}).Where("started_at >= ?", usageDayOf(*from))
	long := q.Session(&gorm.Session{}).Where("id IN (SELECT record_id FROM usage_long WHERE ended_at >= ?)", *from)
	ids := keysetUnion(r.db.WithContext(ctx), "started_at", "id", c, true, limit, recent, long)
	return keyset(r.db.WithContext(ctx).Model(&models.UsageRecord{}).Where("id IN (?)", ids), "started_at", "id", c, true, limit)
}

// SandboxCount is how many of the sandboxes p may list are in state: the
// Dashboard's figure of running machines, however old the oldest of them.
func (r *Runtime) SandboxCount(ctx context.Context, p Principal, state string) (int, error) {
	var n int64
	err := r.run(ctx, p, "Sandbox.list", func(a *act) error {
		q := r.db.WithContext(ctx).Model(&models.Sandbox{}).Where("state = ?", state)
		return scopeBySession(q, r.listScope(p, "Sandbox.list"), "session_id").Count(&n).Error
	})
	return int(n), err
}

// SandboxPage is one page of Sandbox.list.
type SandboxPage struct {
	Items []SandboxView `json:"items"`
	PageLinks
}

// SandboxListPage is Sandbox.list by cursor, newest first; f.Limit defaults to def.
func (r *Runtime) SandboxListPage(ctx context.Context, p Principal, f SandboxFilter, def int) (SandboxPage, error) {
	out := SandboxPage{Items: []SandboxView{}}
	err := r.run(ctx, p, "Sandbox.list", func(a *act) error {
		c, err := ParseCursor(f.Cursor)
		if err != nil {
			return err
		}
		limit, err := pageLimit(f.Limit, def)
		if err != nil {
			return err
		}
		q := r.db.WithContext(ctx).Model(&models.Sandbox{})
		if f.Session != "" {
			if _, err := r.loadSession(ctx, p, f.Session); err != nil {
				return err
			}
			a.target(f.Session)
			q = q.Where("session_id = ?", f.Session)
		}
		q = scopeBySession(q, r.listScope(p, "Sandbox.list"), "session_id")
		var ms []models.Sandbox
		if err := keyset(q, "created_at", "id", c, true, limit).Find(&ms).Error; err != nil {
			return fmt.Errorf("runtime: list sandboxes: %w", err)
		}
		ms, out.PageLinks = pageOf(ms, c, limit, func(m models.Sandbox) (time.Time, string) { return m.CreatedAt, m.ID })
		titles, err := r.sessionTitles(ctx, ms)
		for _, m := range ms {
			out.Items = append(out.Items, r.sandboxView(m, titles[m.SessionID]))
		}
		return err
	})
	return out, err
}

// usagePage reads one page of the records q selects, newest first, named.
func (r *Runtime) usagePage(ctx context.Context, q *gorm.DB, from *time.Time, c Cursor, limit int) ([]UsageRecordView, PageLinks, error) {
	var recs []models.UsageRecord
	if err := r.usageRecords(ctx, q, from, c, limit).Find(&recs).Error; err != nil {
		return nil, PageLinks{}, fmt.Errorf("runtime: usage records: %w", err)
	}
	recs, links := pageOf(recs, c, limit, func(u models.UsageRecord) (time.Time, string) { return u.StartedAt, u.ID })
	out := make([]UsageRecordView, len(recs))
	for i, u := range recs {
		out[i] = usageRecordView(u)
	}
	return out, links, r.nameUsage(ctx, out)
}
