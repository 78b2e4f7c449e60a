package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// Migration 0039 copies each approval's tenant, agent, tool and grant from
// its session and call; the decided approvals' filters and the lists' scopes
// (a tenant's people's, an agent's or a session's approvers') read those
// copies. Every filter's pages, followed to the end and back, are exactly
// its decisions, newest first, each once, and the pending count is the
// scope's (SQLite, PostgreSQL).
func TestDecidedApprovalFiltersAfterTheirBackfill(t *testing.T) {
	db := modelstest.Open(t)
	rt := New(db, Options{})
	t.Cleanup(rt.Close)
	ctx := t.Context()
	// The approvals table as it was before 0039.
	for _, stmt := range []string{
		`DROP INDEX approvals_session_page`, `DROP INDEX approvals_tenant_page`, `DROP INDEX approvals_agent_page`,
		`DROP INDEX approvals_tool_page`, `DROP INDEX approvals_grant_page`, `ALTER TABLE approvals DROP COLUMN tenant_id`, `ALTER TABLE approvals DROP COLUMN agent_id`, `ALTER TABLE approvals DROP COLUMN tool`, `ALTER TABLE approvals DROP COLUMN grant_name`,
		`CREATE INDEX approvals_session ON approvals(session_id)`, `DELETE FROM schema_migrations WHERE version = 39`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	type call struct{ grant, tool string }
	calls := []call{{"github", "mcp__github__create_issue"}, {"github", "mcp__github__merge"}, {"shell", "sandbox__shell__exec"}}
	agents := []string{"billing", "support"}
	sessions := []struct{ id, agent, tenant string }{{"ses_a", "ag_billing", ""}, {"ses_b", "ag_billing", "ten_acme"}, {"ses_c", "ag_support", "ten_acme"}}
	if err := db.Exec(`INSERT INTO tenants (id, name, created_at) VALUES ('ten_acme', 'acme', ?)`, base).Error; err != nil {
		t.Fatal(err)
	}
	for _, name := range agents {
		id := "ag_" + name
		if err := db.Exec(`INSERT INTO agents (id, name, description, created_at, updated_at) VALUES (?, ?, '', ?, ?)`, id, name, base, base).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Version{ID: "ver_" + name, AgentID: id, Number: 1, State: StatePublished, Config: "{}", CreatedAt: base, UpdatedAt: base}).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sessions {
		if err := db.Create(&models.Session{ID: s.id, VersionID: "ver_" + strings.TrimPrefix(s.agent, "ag_"), AgentID: s.agent, TenantID: s.tenant, Title: s.id,
			State: SessionActive, TokenHash: "hash_" + s.id, CreatedAt: base}).Error; err != nil {
			t.Fatal(err)
		}
	}
	type want struct {
		id, state, tenant, agent, session, grant, tool string
		decided                                        *time.Time
	}
	var all []want
	states := []string{ApprovalApproved, ApprovalDenied, ApprovalExpired, ApprovalPending}
	for i := range 90 {
		s, c := sessions[i%3], calls[(i/3)%3]
		if i%7 == 0 {
			c = calls[2]
		}
		at := base.Add(time.Duration(i/2) * time.Second) // pairs share a second: ties broken by id
		w := want{id: fmt.Sprintf("apr_%03d", i), state: states[i%4], tenant: s.tenant, agent: s.agent, session: s.id, grant: c.grant, tool: c.tool}
		if w.state != ApprovalPending {
			d := at.Add(time.Duration(90-i) * time.Second / 3) // decided out of the asking order
			w.decided = &d
		}
		all = append(all, w)
		tc := models.ToolCall{ID: fmt.Sprintf("call_%03d", i), SessionID: s.id, VersionID: "ver_" + strings.TrimPrefix(s.agent, "ag_"), Tool: c.tool,
			Kind: "mcp", GrantName: c.grant, ToolName: c.tool, Input: "{}", Status: "succeeded", Verdict: "ask", ByKind: "session", ByID: s.id, CreatedAt: at}
		if err := db.Create(&tc).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(`INSERT INTO approvals (id, tool_call_id, session_id, state, scope, reason, decided_by, decided_by_label, created_at, decided_at, expires_at)
			VALUES (?, ?, ?, ?, 'call', '', '', '', ?, ?, ?)`, w.id, tc.ID, s.id, w.state, at, w.decided, time.Now().Add(time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
	}
	if ran, err := db.Migrate(); err != nil || !slices.Equal(ran, []int{39}) {
		t.Fatalf("migrate: %v %v", ran, err)
	}
	var copied []models.Approval
	if err := db.Order("id").Find(&copied).Error; err != nil {
		t.Fatal(err)
	}
	for i, ap := range copied {
		if w := all[i]; ap.TenantID != w.tenant || ap.AgentID != w.agent || ap.Tool != w.tool || ap.GrantName != w.grant {
			t.Errorf("%s after 0039: tenant %q agent %q tool %q grant %q, want %q %q %q %q", ap.ID, ap.TenantID, ap.AgentID, ap.Tool, ap.GrantName,
				w.tenant, w.agent, w.tool, w.grant)
		}
	}

	for _, c := range []struct {
		f     QueueFilter
		scope ListScope
		match func(want) bool
	}{
		{QueueFilter{Agent: "ag_support"}, ListScope{All: true}, func(w want) bool { return w.agent == "ag_support" }},
		{QueueFilter{Agent: "billing"}, ListScope{All: true}, func(w want) bool { return w.agent == "ag_billing" }},
		{QueueFilter{Agent: "nobody"}, ListScope{All: true}, func(want) bool { return false }},
		{QueueFilter{Tool: "mcp__github__merge"}, ListScope{All: true}, func(w want) bool { return w.tool == "mcp__github__merge" }},
		{QueueFilter{Grant: "shell"}, ListScope{All: true}, func(w want) bool { return w.grant == "shell" }},
		{QueueFilter{Session: "ses_b", Grant: "github"}, ListScope{All: true}, func(w want) bool { return w.session == "ses_b" && w.grant == "github" }},
		{QueueFilter{State: ApprovalDenied, Tool: "sandbox__shell__exec"}, ListScope{All: true}, func(w want) bool {
			return w.state == ApprovalDenied && w.tool == "sandbox__shell__exec"
		}},
		// What a tenant's person, an agent's approver and a session's see.
		{QueueFilter{}, ListScope{Tenants: []string{"ten_acme"}}, func(w want) bool { return w.tenant == "ten_acme" }},
		{QueueFilter{Tool: "mcp__github__merge"}, ListScope{Tenants: []string{"ten_acme"}}, func(w want) bool {
			return w.tenant == "ten_acme" && w.tool == "mcp__github__merge"
		}},
		{QueueFilter{}, ListScope{Agents: []string{"ag_support"}, Sessions: []string{"ses_a"}}, func(w want) bool {
			return w.agent == "ag_support" || w.session == "ses_a"
		}},
	} {
		f := c.f
		if f.State == "" {
			f.State = ApprovalDecided
		}
		var expect []string
		for _, w := range all {
			if w.decided != nil && c.match(w) {
				expect = append(expect, w.id)
			}
		}
		slices.SortFunc(expect, func(a, b string) int { // newest decision first, ties by id
			wa, wb := all[idIndex(a)], all[idIndex(b)]
			if d := wb.decided.Compare(*wa.decided); d != 0 {
				return d
			}
			return strings.Compare(b, a)
		})
		pending := 0 // what the scope covers, whatever the filter
		for _, w := range all {
			if w.state == ApprovalPending && c.scope.Covers(w.tenant, w.agent, "", w.session) {
				pending++
			}
		}
		var got []string
		var pages [][]string
		f.Limit = 4
		for range 40 {
			q, err := rt.approvalQueue(ctx, f, c.scope)
			if err != nil {
				t.Fatalf("%+v: %v", f, err)
			}
			if q.Pending != pending {
				t.Errorf("%+v in %+v: %d pending, want %d", c.f, c.scope, q.Pending, pending)
			}
			var page []string
			for _, it := range q.Items {
				page = append(page, it.ID)
			}
			got, pages = append(got, page...), append(pages, page)
			if q.Links.Next == "" {
				break
			}
			f.Cursor = q.Links.Next
		}
		if !slices.Equal(got, expect) {
			t.Errorf("%+v in %+v: the pages hold %v, want %v", c.f, c.scope, got, expect)
		}
		// And back from the last page, through each page's previous cursor.
		for i := len(pages) - 1; i > 0; i-- {
			q, err := rt.approvalQueue(ctx, f, c.scope)
			if err != nil {
				t.Fatal(err)
			}
			if q.Links.Prev == "" {
				t.Errorf("%+v: page %d has no previous page", c.f, i)
				break
			}
			f.Cursor = q.Links.Prev
			q, err = rt.approvalQueue(ctx, f, c.scope)
			if err != nil {
				t.Fatal(err)
			}
			var page []string
			for _, it := range q.Items {
				page = append(page, it.ID)
			}
			if !slices.Equal(page, pages[i-1]) {
				t.Errorf("%+v: back to page %d: %v, want %v", c.f, i-1, page, pages[i-1])
			}
		}
	}
}

func idIndex(id string) int {
	var i int
	fmt.Sscanf(id, "apr_%03d", &i)
	return i
}
