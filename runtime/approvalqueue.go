package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
)

// QueueItem is an approval with everything an approver needs to decide it
// without opening another page: what is called, under which rule, by whom,
// in which session, and with what input. Its JSON is a superset of
// ApprovalView, so Approval.list keeps its shape.
type QueueItem struct {
	ApprovalView
	Tool           string          `json:"tool"`
	Kind           string          `json:"kind"`
	Grant          string          `json:"grant"`
	ToolName       string          `json:"tool_name"`
	PolicySource   string          `json:"policy_source"`         // default or rule: where "ask" came from
	PolicyRule     string          `json:"policy_rule,omitempty"` // which rule asked: "rule 2: …", "no rule matched …"
	Agent          string          `json:"agent"`
	AgentName      string          `json:"agent_name"`
	Version        string          `json:"version"`
	VersionNumber  int             `json:"version_number"`
	SessionTitle   string          `json:"session_title"`
	Model          string          `json:"model"`
	By             string          `json:"by"`
	Input          json.RawMessage `json:"input"`
	InputTruncated bool            `json:"input_truncated,omitempty"`
	CallStatus     string          `json:"call_status"`
	// WaitedMS is how long the call has waited (pending) or waited before its
	// decision (decided), by the runtime's clock.
	WaitedMS int64 `json:"waited_ms"`

	byKind, byID string // who made the call, for DecidableBy
}

// DecidableBy says whether p may approve or deny this item now: the rule
// Approval.approve and Approval.deny enforce, so a page offers the buttons
// only where a click can succeed.
func (it QueueItem) DecidableBy(p Principal) bool {
	return it.State == ApprovalPending && p.Can("Approval.approve") && !ownCall(p, it.byKind, it.byID)
}

// OwnCall says whether p made this item's call: the reason a page gives for
// not offering the decision to them.
func (it QueueItem) OwnCall(p Principal) bool { return ownCall(p, it.byKind, it.byID) }

// QueueFilter narrows Approval.list. State is pending (the default),
// approved, denied, expired, or decided (all three). Agent is an agent's id
// or name, Grant a grant's name, Tool a full tool name; Q searches the tool,
// grant, agent, session, caller, model, decider and reason.
type QueueFilter struct {
	State   string `query:"state" json:"state"`
	Agent   string `query:"agent" json:"agent"`
	Session string `query:"session" json:"session"`
	Grant   string `query:"grant" json:"grant"`
	Tool    string `query:"tool" json:"tool"`
	Q       string `query:"q" json:"q"`
	// Approval is one approval's id: where a notification's link leads.
	Approval string `query:"approval" json:"approval"`
	Order    string `query:"order" json:"order"` // oldest or newest
	Limit    int    `query:"limit" json:"limit"`
	// Cursor continues the list after a page (lists.go).
	Cursor string `query:"cursor" json:"cursor"`
	// NoChoices leaves out the values the filters offer (Queue.Agents …):
	// the Approvals page's live updates do not show them. Not a parameter.
	NoChoices bool `query:"-" json:"-"`
}

// QueueChoice is one value a queue filter can take, with what a person reads.
type QueueChoice struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// Queue is one read of the approvals: the matching items, the filter values
// the pending approvals offer, and how many are pending in all.
type Queue struct {
	Items    []QueueItem
	Pending  int
	Agents   []QueueChoice
	Sessions []QueueChoice
	Grants   []string
	Tools    []string
	// Links are the cursors of the pages beside this one.
	Links PageLinks
}

// ApprovalDecided is the pseudo-state that matches every decided approval.
const ApprovalDecided = "decided"

// Limits of a queue read.
const (
	maxQueueLimit = 500
	maxQueueQuery = 200
)

func (f *QueueFilter) check() error {
	switch f.State {
	case "":
		f.State = ApprovalPending
	case ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalCancelled, ApprovalDecided:
	default:
		return invalid("state", "invalid_state", "state must be pending, approved, denied, expired, cancelled or decided")
	}
	if f.Order != "" && f.Order != "oldest" && f.Order != "newest" {
		return invalid("order", "invalid_order", "order must be oldest or newest")
	}
	if f.Limit < 0 || f.Limit > maxQueueLimit {
		return invalid("limit", "invalid_limit", fmt.Sprintf("limit must be between 1 and %d", maxQueueLimit))
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	f.Q = strings.TrimSpace(f.Q)
	if n := utf8.RuneCountInString(f.Q); n > maxQueueQuery {
		return invalid("q", "query_too_long", fmt.Sprintf("q must be at most %d characters; it has %d", maxQueueQuery, n))
	}
	return nil
}

// ApprovalQueue is Approval.list with the whole picture: pending approvals
// oldest first by default, decided ones newest first, filtered and searched.
func (r *Runtime) ApprovalQueue(ctx context.Context, p Principal, f QueueFilter) (Queue, error) {
	var out Queue
	err := r.run(ctx, p, "Approval.list", func(a *act) error {
		var err error
		out, err = r.approvalQueue(ctx, f, r.listScope(p, "Approval.list"))
		return err
	})
	return out, err
}

// approvalQueue is Approval.list's read of what scope covers.
func (r *Runtime) approvalQueue(ctx context.Context, f QueueFilter, scope ListScope) (Queue, error) {
	var out Queue
	if err := f.check(); err != nil {
		return out, err
	}
	c, err := ParseCursor(f.Cursor)
	if err != nil {
		return out, err
	}
	now := r.now()
	var agents []string
	if f.Agent != "" {
		// By id or by name (names are unique): at most one of each.
		err := r.db.WithContext(ctx).Model(&models.Agent{}).Where("id = ? OR name = ?", f.Agent, f.Agent).Limit(2).Pluck("id", &agents).Error
		if err != nil {
			return out, fmt.Errorf("runtime: approval queue agent: %w", err)
		}
	}
	var rows []queueRow
	if err := scopeApprovals(r.queueQuery(ctx, f, agents, c, now), scope).Scan(&rows).Error; err != nil {
		return out, fmt.Errorf("runtime: approval queue: %w", err)
	}
	rows, out.Links = pageOf(rows, c, f.Limit, queueRow.key)
	out.Items = make([]QueueItem, 0, len(rows))
	for _, row := range rows {
		out.Items = append(out.Items, row.item(now))
	}
	if f.State == ApprovalPending && !f.NoChoices {
		if err := r.queueChoices(ctx, now, scope, &out); err != nil {
			return out, fmt.Errorf("runtime: approval queue choices: %w", err)
		}
	}
	out.Pending = r.pendingCount(ctx, now, scope)
	return out, nil
}

// PendingApprovals counts the approvals waiting for a decision, for the
// navigation on every page. It is not an Action: it runs on every page view
// and reveals only a number, and only to whoever may list approvals anyway.
func (r *Runtime) PendingApprovals(ctx context.Context, p Principal) int {
	if !p.Can("Approval.list") {
		return 0
	}
	return r.pendingCount(ctx, r.now(), r.listScope(p, "Approval.list"))
}

// pendingCount leaves out approvals past their expiry that the reaper has not
// reached yet: nobody can decide them any more.
func (r *Runtime) pendingCount(ctx context.Context, now time.Time, scope ListScope) int {
	var n int64
	q := r.db.WithContext(ctx).Table("approvals AS a").Where("a.state = ? AND a.expires_at > ?", ApprovalPending, now)
	err := scopeApprovals(q, scope).Count(&n).Error
	if err != nil {
		r.opts.Log.Warn("runtime: count pending approvals", "err", err)
	}
	return int(n)
}

// queueRow is one approval joined with its call, session, version and agent.
type queueRow struct {
	ID, ToolCallID, SessionID, State, Scope, Reason, DecidedByLabel string
	CreatedAt, ExpiresAt                                            time.Time
	DecidedAt                                                       *time.Time
	Tool, Kind, GrantName, ToolName, PolicySource, Model, ByLabel   string
	PolicyRule                                                      string
	ByKind, ByID                                                    string
	Input                                                           string
	InputTruncated                                                  bool
	CallStatus, VersionID, SessionTitle, AgentID, AgentName         string
	VersionNumber                                                   int
}

func (row queueRow) item(now time.Time) QueueItem {
	waited := now.Sub(row.CreatedAt)
	if row.DecidedAt != nil {
		waited = row.DecidedAt.Sub(row.CreatedAt)
	}
	return QueueItem{
		ApprovalView: ApprovalView{ID: row.ID, Call: row.ToolCallID, Session: row.SessionID, State: row.State, Scope: row.Scope,
			Reason: row.Reason, DecidedBy: row.DecidedByLabel, CreatedAt: row.CreatedAt, DecidedAt: row.DecidedAt, ExpiresAt: row.ExpiresAt},
		Tool: row.Tool, Kind: row.Kind, Grant: row.GrantName, ToolName: row.ToolName, PolicySource: row.PolicySource, PolicyRule: row.PolicyRule,
		Agent: row.AgentID, AgentName: row.AgentName, Version: row.VersionID, VersionNumber: row.VersionNumber,
		SessionTitle: row.SessionTitle, Model: row.Model, By: row.ByLabel, Input: recordedJSON(row.Input, row.InputTruncated),
		InputTruncated: row.InputTruncated, CallStatus: row.CallStatus, WaitedMS: max(waited, 0).Milliseconds(),
		byKind: row.ByKind, byID: row.ByID,
	}
}

const queueColumns = `a.id, a.tool_call_id, a.session_id, a.state, a.scope, a.reason, a.decided_by_label,
	a.created_at, a.expires_at, a.decided_at, c.tool, c.kind, c.grant_name, c.tool_name, c.policy_source, c.policy_rule, c.model,
	c.by_label, c.by_kind, c.by_id, c.input, c.input_truncated, c.status AS call_status, c.version_id, s.title AS session_title,
	s.agent_id, COALESCE(g.name, '') AS agent_name, COALESCE(v.number, 0) AS version_number`

// queueFrom joins what an item shows; versions and agents are outer joins
// because a deleted agent must not hide the calls still waiting in its name.
func (r *Runtime) queueFrom(ctx context.Context) *gorm.DB {
	return r.db.WithContext(ctx).Table("approvals AS a").
		Joins("JOIN tool_calls c ON c.id = a.tool_call_id").
		Joins("JOIN sessions s ON s.id = a.session_id").
		Joins("LEFT JOIN versions v ON v.id = c.version_id").
		Joins("LEFT JOIN agents g ON g.id = s.agent_id")
}

// key is where a page of the queue ends: pending approvals are ordered by
// when they were asked, decided ones by when they were decided.
func (row queueRow) key() (time.Time, string) {
	if row.State != ApprovalPending && row.DecidedAt != nil {
		return *row.DecidedAt, row.ID
	}
	return row.CreatedAt, row.ID
}

// queueQuery reads f's page after c; agents are the ids f.Agent names.
func (r *Runtime) queueQuery(ctx context.Context, f QueueFilter, agents []string, c Cursor, now time.Time) *gorm.DB {
	q := r.queueFrom(ctx).Select(queueColumns)
	switch f.State {
	case ApprovalPending:
		q = q.Where("a.state = ? AND a.expires_at > ?", ApprovalPending, now)
		q = keyset(q, "a.created_at", "a.id", c, f.Order == "newest", f.Limit)
	default:
		if f.State == ApprovalDecided {
			// Every decision and expiry sets decided_at, and only they do: so
			// written, the index on (decided_at, id) both selects and orders.
			q = q.Where("a.decided_at IS NOT NULL")
		} else {
			q = q.Where("a.state = ?", f.State)
		}
		q = keyset(q, "a.decided_at", "a.id", c, f.Order != "oldest", f.Limit)
	}
	// Each filter is on the approval's own copy of its call's facts, so a
	// rare value seeks its index (migration 0039) instead of walking the
	// decisions for the few that match.
	switch {
	case f.Agent != "" && len(agents) == 0:
		q = q.Where("1 = 0") // no such agent
	case f.Agent != "":
		q = q.Where("a.agent_id IN ?", agents)
	}
	if f.Session != "" {
		q = q.Where("a.session_id = ?", f.Session)
	}
	if f.Grant != "" {
		q = q.Where("a.grant_name = ?", f.Grant)
	}
	if f.Tool != "" {
		q = q.Where("a.tool = ?", f.Tool)
	}
	if f.Approval != "" {
		q = q.Where("a.id = ?", f.Approval)
	}
	if f.Q != "" {
		q = q.Where(searchClause, searchArgs(f.Q)...)
	}
	return q
}

// searchClause matches the text anywhere in what a person would remember of
// a decision, case-insensitively on both SQLite and PostgreSQL.
const searchClause = `(LOWER(c.tool) LIKE ? ESCAPE '\' OR LOWER(c.grant_name) LIKE ? ESCAPE '\'
	OR LOWER(COALESCE(g.name, '')) LIKE ? ESCAPE '\' OR LOWER(s.title) LIKE ? ESCAPE '\' OR LOWER(c.by_label) LIKE ? ESCAPE '\'
	OR LOWER(c.model) LIKE ? ESCAPE '\' OR LOWER(a.decided_by_label) LIKE ? ESCAPE '\' OR LOWER(a.reason) LIKE ? ESCAPE '\'
	OR a.id = ? OR a.tool_call_id = ? OR a.session_id = ?)`

func searchArgs(q string) []any {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(q))
	like := "%" + esc + "%"
	return []any{like, like, like, like, like, like, like, like, q, q, q}
}

// queueChoices lists the agents, sessions, grants and tools that have pending
// approvals, so the filters offer only values that match something.
func (r *Runtime) queueChoices(ctx context.Context, now time.Time, scope ListScope, out *Queue) error {
	var rows []struct{ AgentID, AgentName, SessionID, SessionTitle, GrantName, Tool string }
	err := scopeSessions(r.queueFrom(ctx), scope, "s.").Select(`DISTINCT s.agent_id, COALESCE(g.name, '') AS agent_name, a.session_id, s.title AS session_title,
		c.grant_name, c.tool`).
		Where("a.state = ? AND a.expires_at > ?", ApprovalPending, now).Limit(1000).Scan(&rows).Error
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, row := range rows {
		if !seen["a"+row.AgentID] {
			out.Agents = append(out.Agents, QueueChoice{Value: row.AgentID, Label: orID(row.AgentName, row.AgentID)})
		}
		if !seen["s"+row.SessionID] {
			out.Sessions = append(out.Sessions, QueueChoice{Value: row.SessionID, Label: orID(row.SessionTitle, row.SessionID)})
		}
		if !seen["g"+row.GrantName] {
			out.Grants = append(out.Grants, row.GrantName)
		}
		if !seen["t"+row.Tool] {
			out.Tools = append(out.Tools, row.Tool)
		}
		seen["a"+row.AgentID], seen["s"+row.SessionID], seen["g"+row.GrantName], seen["t"+row.Tool] = true, true, true, true
	}
	byLabel := func(a, b QueueChoice) int { return strings.Compare(a.Label, b.Label) }
	slices.SortFunc(out.Agents, byLabel)
	slices.SortFunc(out.Sessions, byLabel)
	slices.Sort(out.Grants)
	slices.Sort(out.Tools)
	return nil
}

func orID(label, id string) string {
	if strings.TrimSpace(label) == "" {
		return id
	}
	return label
}
