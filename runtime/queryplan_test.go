package runtime

import (
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// A volume's or an archive's last storage record, read on every call that
// changes a volume, is found through its index, not by reading every usage
// record: the query names the partial index's condition, and each storage
// kind is one the index holds (SQLite's plan; PostgreSQL's planner picks by
// its statistics).
func TestLastStorageUsageReadsItsIndex(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.SQLite {
		t.Skip("the plan is SQLite's")
	}
	for _, kind := range []string{UsageArchiveBytes, UsageVolumeBytes} {
		got := queryPlan(t, db, "SELECT * FROM usage_records WHERE "+lastStorageWhere+" ORDER BY "+lastStorageOrder+" LIMIT 1", kind, "ses_x")
		if !strings.Contains(got, "USING INDEX usage_records_storage (subject=? AND kind=?)") || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: the last storage record is read by %q, want a search of usage_records_storage with no sort", kind, got)
		}
	}
}

// A client's poll reads its session's calls waiting for a client through
// the partial index of waiting calls, not the session's every call.
func TestClientPollReadsOnlyWaitingCalls(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.SQLite {
		t.Skip("the plan is SQLite's")
	}
	if got := queryPlan(t, db, "SELECT * FROM tool_calls WHERE "+waitingClientWhere+" AND session_id = ? AND claimed_by = '' AND (client = ? OR (kind = ? AND client = '')) ORDER BY created_at LIMIT 5", "ses_x", "cli", "builtin"); !strings.Contains(got, "USING INDEX tool_calls_waiting (session_id=?)") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("a client's poll reads %q, want a search of tool_calls_waiting with no sort", got)
	}
}

// queryPlan is SQLite's plan for q, its steps joined by "; ".
func queryPlan(t *testing.T, db *models.DB, q string, args ...any) string {
	t.Helper()
	var plan []struct {
		ID, Parent, Notused int
		Detail              string
	}
	if err := db.Raw("EXPLAIN QUERY PLAN "+q, args...).Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	var details []string
	for _, p := range plan {
		details = append(details, p.Detail)
	}
	return strings.Join(details, "; ")
}

// Change.list's pages, the newest and those after a Change, by kind or
// subject, seek an index in the list's order (migration 0038): no sort.
func TestChangePagesSeekTheirIndex(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.SQLite {
		t.Skip("the plan is SQLite's")
	}
	after := Cursor{At: time.Now(), ID: "chg_x"}
	for _, c := range []struct {
		name  string
		q     *gorm.DB
		after Cursor
		index string
	}{
		{"newest", db.Model(&models.Change{}), Cursor{}, "changes_page"},
		{"older", db.Model(&models.Change{}), after, "changes_page"},
		{"older, by kind", db.Model(&models.Change{}).Where("kind = ?", "seat"), after, "changes_kind_page"},
		{"older, by subject", db.Model(&models.Change{}).Where("subject = ?", "seat_x"), after, "changes_subject_page"},
	} {
		var rows []models.Change
		stmt := changePage(c.q, c.after, 50).Session(&gorm.Session{DryRun: true}).Find(&rows).Statement
		got := queryPlan(t, db, stmt.SQL.String(), stmt.Vars...)
		if !strings.Contains(got, "INDEX "+c.index) || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: the page reads %q, want a search of %s with no sort", c.name, got, c.index)
		}
	}
}

// The decided approvals filtered by agent, tool, grant or session, or seen
// by a tenant's person or an agent's approver, newest and after a decision,
// seek that filter's index in the list's order (migration 0039): no walk of
// every decision for the few that match, no sort. Alone and with a state.
func TestDecidedApprovalFiltersSeekTheirIndex(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.SQLite {
		t.Skip("the plan is SQLite's")
	}
	r := &Runtime{db: db}
	after := Cursor{At: time.Now(), ID: "apr_x"}
	for _, c := range []struct {
		name   string
		f      QueueFilter
		agents []string
		scope  ListScope
		index  string
	}{
		{"agent", QueueFilter{Agent: "billing"}, []string{"ag_x"}, ListScope{All: true}, "approvals_agent_page"},
		{"tool", QueueFilter{Tool: "github__create_issue"}, nil, ListScope{All: true}, "approvals_tool_page"},
		{"grant", QueueFilter{Grant: "github"}, nil, ListScope{All: true}, "approvals_grant_page"},
		{"session", QueueFilter{Session: "ses_x"}, nil, ListScope{All: true}, "approvals_session_page"},
		// A tenant's person's list, and an agent's approver's.
		{"tenant's", QueueFilter{}, nil, ListScope{Tenants: []string{"ten_x"}}, "approvals_tenant_page"},
		{"agent's", QueueFilter{}, nil, ListScope{Agents: []string{"ag_x"}}, "approvals_agent_page"},
	} {
		for _, state := range []string{ApprovalDecided, ApprovalDenied} {
			for _, cur := range []Cursor{{}, after} {
				f := c.f
				f.State, f.Limit = state, 50
				var rows []queueRow
				stmt := scopeApprovals(r.queueQuery(t.Context(), f, c.agents, cur, time.Now()), c.scope).Session(&gorm.Session{DryRun: true}).Scan(&rows).Statement
				got := queryPlan(t, db, stmt.SQL.String(), stmt.Vars...)
				if !strings.Contains(got, "INDEX "+c.index) || strings.Contains(got, "TEMP B-TREE") {
					t.Errorf("%s, %s, after %q: the page reads %q, want a search of %s with no sort", c.name, state, cur.ID, got, c.index)
				}
			}
		}
	}
}
