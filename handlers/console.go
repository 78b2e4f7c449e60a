package handlers

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/views/pages"
)

// Dashboard is the console's home.
func (h *Handlers) Dashboard(c echo.Context) error {
	p := principal(c)
	var d pages.Dashboard
	if agents, err := h.RT.AgentList(ctx(c), p); err == nil {
		d.Agents = len(agents)
	}
	if people, err := h.RT.UserList(ctx(c), p); err == nil {
		d.People = len(people)
		for _, u := range people {
			if u.ID == p.ID {
				d.Name = u.Name
			}
		}
	}
	if acts, err := h.RT.ActionList(ctx(c), p, runtime.ActionFilter{Limit: 8, Changes: true}); err == nil {
		d.Actions = actionRows(acts)
	}
	h.dashboardFigures(c, &d)
	return render(c, http.StatusOK, pages.DashboardPage(h.shell(c, "Dashboard", ""), d))
}

// Audit lists Actions with filters.
func (h *Handlers) Audit(c echo.Context) error {
	p := principal(c)
	// Reads are recorded too, but they drown the changes people look for:
	// the page shows them only when asked.
	reads := c.QueryParam("reads") == "on"
	f := runtime.ActionFilter{Verb: c.QueryParam("verb"), By: c.QueryParam("by"), Verdict: c.QueryParam("verdict"), Parent: c.QueryParam("parent"),
		Before: c.QueryParam("before"), Cursor: c.QueryParam("cursor"), Limit: runtime.PageSize,
		Changes: !reads && c.QueryParam("verb") == "" && c.QueryParam("parent") == ""}
	list, err := h.RT.ActionListPage(ctx(c), p, f)
	if err != nil {
		return err
	}
	acts := list.Items
	view := pages.AuditFilter{Verb: f.Verb, By: f.By, Verdict: f.Verdict, Reads: reads}
	if people, err := h.RT.UserList(ctx(c), p); err == nil {
		for _, u := range people {
			view.People = append(view.People, u.Email)
		}
	}
	q := url.Values{"verb": {f.Verb}, "by": {f.By}, "verdict": {f.Verdict}}
	if f.Parent != "" {
		q.Set("parent", f.Parent)
	}
	if reads {
		q.Set("reads", "on")
	}
	pg := pagerOf("/audit", q, f.Cursor+f.Before, list.PageLinks)
	view.Newer, view.Next = pg.Newer, pg.Older
	return render(c, http.StatusOK, pages.AuditPage(h.shell(c, "Audit", "audit"), view, actionRows(acts)))
}

func actionRows(acts []runtime.ActionView) []pages.ActionRow {
	rows := make([]pages.ActionRow, 0, len(acts))
	for _, a := range acts {
		rows = append(rows, pages.ActionRow{ID: a.ID, Time: isoTime(a.CreatedAt), Verb: a.Verb, By: a.By,
			Targets: a.Targets, Verdict: a.Verdict, Reason: a.Reason, Model: a.Model, Client: a.Client, Rule: a.PolicyRule,
			Permission: a.Permission, Missing: a.MissingPermission, Parent: a.Parent, Program: a.Verb == "Program.run"})
	}
	return rows
}

// dashboardFigures fills what an operator checks first: waiting approvals,
// active sessions, running sandboxes and today's spend (UTC, from the usage
// records), and whether to offer the example agent.
func (h *Handlers) dashboardFigures(c echo.Context, d *pages.Dashboard) {
	p := principal(c)
	d.Approvals = h.RT.PendingApprovals(ctx(c), p)
	// Counted, not listed: a page of the newest would miss the older ones.
	if n, err := h.RT.SessionCount(ctx(c), p, runtime.SessionFilter{State: runtime.SessionActive}); err == nil {
		d.Sessions = n
	}
	if n, err := h.RT.SandboxCount(ctx(c), p, string(sandbox.StateRunning)); err == nil {
		d.Sandboxes = n
	}
	today := h.RT.Now().Format("2006-01-02")
	if credits, err := h.RT.UsageCredits(ctx(c), p, runtime.UsageFilter{From: today}); err == nil {
		d.Spend = fmt.Sprintf("%.2f SC", credits)
	}
	d.OfferExample = d.Agents == 0 && p.CanLoadExample()
}
