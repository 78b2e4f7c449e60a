package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// maxVaultSlots bounds the ordered vault pickers of the New session form.
const maxVaultSlots = 6

// Sessions lists sessions with the form to start one.
func (h *Handlers) Sessions(c echo.Context) error {
	// ?version= preselects the version, for a version's Start session link.
	return h.sessionsPage(c, http.StatusOK, pages.SessionForm{Version: c.QueryParam("version")})
}

func (h *Handlers) sessionsPage(c echo.Context, status int, f pages.SessionForm) error {
	p := principal(c)
	cursor := c.QueryParam("cursor")
	list, err := h.RT.SessionListPage(ctx(c), p, runtime.SessionFilter{Cursor: cursor}, runtime.PageSize)
	if err != nil {
		return err
	}
	page := pages.SessionsPage{Form: f, CanCreate: p.Can("Session.create")}
	page.Form.Tenants = h.tenantOptions(c)
	pg := pagerOf("/sessions", nil, cursor, list.PageLinks)
	page.Newer, page.Older = pg.Newer, pg.Older
	if err := h.publishedVersions(c, &page); err != nil {
		return err
	}
	vaults, err := h.RT.VaultList(ctx(c), p)
	if err != nil {
		return err
	}
	vaultNames := map[string]string{}
	for _, v := range vaults {
		vaultNames[v.ID] = v.Name
		page.Vaults = append(page.Vaults, pages.Option{Value: v.ID, Label: v.Name})
	}
	page.Slots = max(min(len(page.Vaults), maxVaultSlots), len(f.Vaults))
	for _, s := range list.Items {
		row := pages.SessionRow{ID: s.ID, Title: s.Title, AgentID: s.Agent, Agent: nameOr(s.AgentName, s.Agent),
			VersionID: s.Version, Version: fmt.Sprintf("Version %d", s.VersionNumber), State: s.State, Created: isoTime(s.CreatedAt)}
		for _, id := range s.Vaults {
			row.Vaults = append(row.Vaults, nameOr(vaultNames[id], id))
		}
		page.Rows = append(page.Rows, row)
	}
	return render(c, status, pages.Sessions(h.shell(c, "Sessions", "sessions"), page))
}

// publishedVersions offers the published versions (across agents) to the
// New session form, read in one query (runtime.PublishedChoices). The
// list's rows carry their own names (Session.list reads them with the
// sessions).
func (h *Handlers) publishedVersions(c echo.Context, page *pages.SessionsPage) error {
	p := principal(c)
	if p.TenantID != "" || !page.CanCreate {
		// Agents and versions are the operator's: a tenant's people start
		// sessions through the API with a version the operator names. Who
		// may not start a session needs no form.
		page.CanCreate = false
		return nil
	}
	choices, more, err := h.RT.PublishedChoices(ctx(c), p, page.Form.Version)
	if e, ok := runtime.AsError(err); ok && (e.Kind == runtime.KindForbidden || e.Kind == runtime.KindTooMany) {
		// Nothing to pick from: whoever may start sessions but not list
		// versions (or not now: a limit spent) starts them through the API.
		// The sessions list stays.
		page.CanCreate = false
		return nil
	}
	if err != nil {
		return err
	}
	for _, v := range choices {
		page.Versions = append(page.Versions, pages.Option{Value: v.ID, Label: fmt.Sprintf("%s · version %d", v.AgentName, v.Number)})
	}
	if more {
		page.VersionsCut = runtime.MaxPublishedChoices
	}
	return nil
}

func nameOr(name, id string) string {
	if name == "" {
		return id
	}
	return name
}

// CreateSession starts a session and redirects to its page, which shows its
// token once: a reload there starts no second session.
func (h *Handlers) CreateSession(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	var vaults []string
	for _, v := range form["vaults"] {
		if v != "" {
			vaults = append(vaults, v)
		}
	}
	in := runtime.SessionCreateInput{Version: form.Get("version"), Vaults: vaults, Title: form.Get("title"), TokenExpires: form.Get("token_expires"), Tenant: form.Get("tenant")}
	s, err := h.RT.SessionCreate(ctx(c), principal(c), in)
	if e, ok := formError(err); ok {
		f := pages.SessionForm{Version: in.Version, Title: in.Title, TokenExpires: in.TokenExpires, Vaults: vaults, Tenant: in.Tenant}
		f.Errors, f.Error = fieldErrors(e)
		for k, msg := range f.Errors {
			// vaults[2] is the third picked vault; the form shows one message for its row of pickers.
			if strings.HasPrefix(k, "vaults[") {
				f.Errors["vaults"] = msg
			}
		}
		return h.sessionsPage(c, statusOf(e.Kind), f)
	}
	if err != nil {
		return err
	}
	h.reveal(c, "session:"+s.ID, s.Token)
	return redirect(c, "/sessions/"+s.ID)
}

// sessionCreated is the one view of a session's token, with where to use it.
func (h *Handlers) sessionCreated(id, token string) *pages.SessionCreated {
	api := h.BaseURL + "/api/v1/sessions/" + id
	curl := fmt.Sprintf("# the tools this session offers\ncurl -H 'Authorization: Bearer %[1]s' %[2]s/tools\n\n"+
		"# call one\ncurl -H 'Authorization: Bearer %[1]s' -H 'Content-Type: application/json' \\\n"+
		"  -d '{\"tool\": \"builtin__session__rename\", \"input\": {\"title\": \"hello\"}}' %[2]s/tool_calls", token, api)
	return &pages.SessionCreated{Token: token, Endpoint: h.BaseURL + "/mcp/sessions/" + id, Curl: curl}
}

// Session is a session's page.
func (h *Handlers) Session(c echo.Context) error {
	d, err := h.sessionDetail(c, c.Param("session"), false)
	if err != nil {
		return err
	}
	title := titleOf(d.Head.Title)
	// Right after Start session, and only then, the page shows the token.
	if token, ok := h.takeRevealed(c, "session:"+d.Head.ID); ok {
		d.Created, title = h.sessionCreated(d.Head.ID, token), "Session started"
	}
	return render(c, http.StatusOK, pages.SessionPage(h.shell(c, title, "sessions"), d))
}

func titleOf(t string) string {
	if t == "" {
		return "Session"
	}
	return t
}

// sessionDetail gathers the page: the live parts, then what the session was
// started with and what it offers.
func (h *Handlers) sessionDetail(c echo.Context, id string, refresh bool) (pages.SessionDetail, error) {
	p := principal(c)
	live, err := h.sessionLive(ctx(c), p, id)
	if err != nil {
		return pages.SessionDetail{}, err
	}
	s := live.session
	d := pages.SessionDetail{Head: live.head, Calls: live.calls, Pending: live.pending, Rules: live.rules,
		AgentID: s.Agent, AgentName: s.Agent, VersionID: s.Version,
		CanRefresh: p.Can("Session.tools") && s.State == runtime.SessionActive}
	d.TokenExpires = isoTimePtr(s.TokenExpiresAt)
	seen := liveSeen(ctx(c), live.parts())
	d.EventsURL = "/sessions/" + url.PathEscape(id) + "/events?" + url.Values{"seen": {seen}}.Encode()
	if s.State == runtime.SessionActive {
		d.Endpoint = h.BaseURL + "/mcp/sessions/" + s.ID
	}
	// A tenant's person does not read the operator's agents and versions.
	if p.TenantID == "" {
		v, err := h.RT.VersionGet(ctx(c), p, s.Version)
		if err != nil {
			return d, err
		}
		d.VersionNumber = v.Number
		if a, err := h.RT.AgentGet(ctx(c), p, s.Agent); err == nil {
			d.AgentName = a.Name
		}
	}
	for _, id := range s.Vaults {
		name := id
		if vlt, err := h.RT.VaultGet(ctx(c), p, id); err == nil {
			name = vlt.Name + needsReconnect(vlt)
		}
		d.Vaults = append(d.Vaults, pages.Option{Value: id, Label: name})
	}
	rep, err := h.RT.SessionToolsReport(ctx(c), p, id, refresh)
	if err != nil {
		return d, err
	}
	for _, f := range rep.Problems {
		if f.Stale {
			d.Stale = append(d.Stale, pages.Option{Value: f.Grant, Label: f.Error})
		} else {
			d.Undiscovered = append(d.Undiscovered, pages.Option{Value: f.Grant, Label: f.Error})
		}
	}
	for _, s := range rep.Skipped {
		d.Skipped = append(d.Skipped, pages.SkippedTool{Grant: s.Grant, Name: s.Name, Reason: s.Reason})
	}
	d.Tools, d.Clients = offeredTools(rep.Tools)
	d.Try = pages.SessionTry{SessionID: id, Tools: d.Tools, CanTry: p.Can("ToolCall.create") && s.State == runtime.SessionActive,
		Ended: s.State != runtime.SessionActive}
	if d.Try.CanTry {
		d.Try.VolumePaths = h.tryVolumePaths(c, id)
	}
	return d, nil
}

// offeredTools lists the tools for the page, and the clients that declared some.
func offeredTools(ts []runtime.OfferedTool) ([]pages.SessionTool, []pages.SessionClient) {
	var out []pages.SessionTool
	var clients []pages.SessionClient
	for _, t := range ts {
		out = append(out, pages.SessionTool{Name: t.Name, Policy: t.Policy, Description: t.Description})
		kind, client, tool, err := tools.ParseFullName(t.Name)
		if err != nil || kind != tools.KindClient {
			continue
		}
		if n := len(clients); n == 0 || clients[n-1].Name != client {
			clients = append(clients, pages.SessionClient{Name: client})
		}
		clients[len(clients)-1].Tools = append(clients[len(clients)-1].Tools, tool)
	}
	return out, clients
}

// sessionLive is what the page shows live: re-read on every event.
type sessionLive struct {
	session runtime.SessionView
	head    pages.SessionHead
	calls   pages.SessionCalls
	pending pages.SessionPending
	rules   pages.SessionRules
}

func (h *Handlers) sessionLive(cx context.Context, p runtime.Principal, id string) (sessionLive, error) {
	var l sessionLive
	s, err := h.RT.SessionGet(cx, p, id)
	if err != nil {
		return l, err
	}
	calls, err := h.RT.ToolCallList(cx, p, id)
	if err != nil {
		return l, err
	}
	pending, err := h.pendingView(cx, p, id, calls)
	if err != nil {
		return l, err
	}
	rules, err := h.rulesView(cx, p, id)
	if err != nil {
		return l, err
	}
	// An ended session's rules are its record: nothing to revoke (SessionRule.revoke refuses).
	rules.CanRevoke = rules.CanRevoke && s.State == runtime.SessionActive
	l = sessionLive{session: s, pending: pending, rules: rules, calls: pages.SessionCalls{SessionID: id}}
	l.head = pages.SessionHead{ID: s.ID, Title: s.Title, State: s.State, Created: isoTime(s.CreatedAt), CanEnd: p.Can("Session.end")}
	if s.EndedAt != nil {
		l.head.Ended = isoTime(*s.EndedAt)
	}
	for _, cl := range calls {
		l.calls.Calls = append(l.calls.Calls, callRow(cl))
	}
	return l, nil
}

func callRow(v runtime.ToolCallView) pages.SessionCall {
	return pages.SessionCall{ID: v.ID, Tool: v.Tool, Status: v.Status, Verdict: v.Verdict, By: v.By, Model: v.Model, Client: v.ClientInfo,
		Duration: callDuration(v), Reason: v.Reason, Error: v.Error, Input: prettyJSON(v.Input), Output: prettyJSON(v.Output),
		InputTruncated: v.InputTruncated, OutputTruncated: v.OutputTruncated, Created: isoTime(v.CreatedAt), Files: volumeSummary(v.Volume),
		Rule: v.PolicyRule, Program: v.Program}
}

func callDuration(v runtime.ToolCallView) string {
	switch {
	case v.FinishedAt == nil || v.StartedAt == nil:
		return "—"
	case v.DurationMS < 1000:
		return fmt.Sprintf("%d ms", v.DurationMS)
	}
	return fmt.Sprintf("%.1f s", float64(v.DurationMS)/1000)
}

// prettyJSON indents JSON for reading; a recorded value cut short is a JSON
// string and is shown as its text.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// TryTool calls a tool as the operator from the session page and shows the
// answer: the call is recorded with their name, like any other.
func (h *Handlers) TryTool(c echo.Context) error {
	id, p := c.Param("session"), principal(c)
	// A quick tool answers within this request; a call that waits longer (for
	// an approver, a client) shows as waiting and its answer follows live
	// (SessionTryResult), so the form is not held for the whole wait.
	wait := 5.0
	in := runtime.ToolCallInput{Session: id, Tool: c.FormValue("tool"), WaitSeconds: &wait,
		Input: json.RawMessage(strings.TrimSpace(c.FormValue("input")))}
	call, err := h.RT.ToolCallCreate(ctx(c), p, in)
	if ctx(c).Err() != nil {
		// The browser stopped waiting (it left the page, or posted another form):
		// the call is recorded and the call log shows it; there is no one to answer,
		// and reading the page's parts on a cancelled context would only fail.
		return nil
	}
	e, shown := formError(err)
	if err != nil && !shown {
		return err // a refusal or a failure: the error page (or box, for htmx) says so
	}
	try := pages.SessionTry{SessionID: id, Tool: in.Tool, Input: c.FormValue("input"), CanTry: p.Can("ToolCall.create")}
	status := http.StatusOK
	if err != nil {
		try.Errors, try.Error = fieldErrors(e)
		// The form has one input box: a problem inside the input (input.command) is shown under it.
		for k, v := range try.Errors {
			if strings.HasPrefix(k, "input.") {
				try.Errors["input"] = v
				delete(try.Errors, k)
			}
		}
		status = statusOf(e.Kind)
	} else {
		row := callRow(call)
		try.Result = &row
		if call.Approval != nil {
			try.Approval = call.Approval.ID
		}
	}
	if !isHTMX(c) && err == nil {
		// Without htmx the call is a form post: redirect, so a reload calls nothing
		// again; the call log on the page shows it.
		h.flash(c, "ok", "Called "+in.Tool+": its result is in the call log.")
		return redirect(c, "/sessions/"+id)
	}
	if !isHTMX(c) {
		d, err := h.sessionDetail(c, id, false)
		if err != nil {
			return err
		}
		try.Tools, try.CanTry, try.VolumePaths = d.Try.Tools, d.Try.CanTry, d.Try.VolumePaths
		d.Try = try
		return render(c, status, pages.SessionPage(h.shell(c, titleOf(d.Head.Title), "sessions"), d))
	}
	ts, err := h.RT.SessionTools(ctx(c), p, id, false)
	if err != nil {
		return err
	}
	try.Tools, _ = offeredTools(ts)
	try.VolumePaths = h.tryVolumePaths(c, id)
	if status != http.StatusOK {
		// app.js swaps error answers that say where they go: the form, with the message under its field.
		c.Response().Header().Set("HX-Retarget", "#try-tool")
		c.Response().Header().Set("HX-Reswap", "outerHTML")
	}
	return render(c, status, pages.SessionTryCard(try))
}

// TryResult is a tried call's answer as it stands now: the fragment the Try
// card re-reads while the call waits for a decision.
func (h *Handlers) TryResult(c echo.Context) error {
	call, err := h.RT.ToolCallGet(ctx(c), principal(c), c.Param("call"))
	if err != nil {
		return err
	}
	if call.Session != c.Param("session") {
		return echo.ErrNotFound
	}
	row := callRow(call)
	t := pages.SessionTry{SessionID: call.Session, Result: &row}
	if call.Approval != nil {
		t.Approval = call.Approval.ID
	}
	return render(c, http.StatusOK, pages.SessionTryResult(t))
}

// RefreshSessionTools re-discovers the session's MCP servers' tools.
func (h *Handlers) RefreshSessionTools(c echo.Context) error {
	id := c.Param("session")
	rep, err := h.RT.SessionToolsReport(ctx(c), principal(c), id, true)
	if err != nil {
		return h.flashError(c, err, "/sessions/"+id)
	}
	kind, msg := "ok", fmt.Sprintf("Discovery refreshed: the session offers %d tools.", len(rep.Tools))
	missing, stale := 0, 0
	for _, p := range rep.Problems {
		if p.Stale {
			stale++
		} else {
			missing++
		}
	}
	// Each count says what the list shows: tools missing, or the last known ones kept.
	if missing > 0 {
		kind, msg = "error", msg+fmt.Sprintf(" %s could not list theirs, so their tools are missing (see Offered tools).", servers(missing))
	}
	if stale > 0 {
		kind, msg = "error", msg+fmt.Sprintf(" %s could not be reached and keep their last known tools (see Offered tools).", servers(stale))
	}
	if len(rep.Skipped) > 0 {
		msg += fmt.Sprintf(" %d listed tools are skipped (see Offered tools for why).", len(rep.Skipped))
	}
	h.flash(c, kind, msg)
	return redirect(c, "/sessions/"+id)
}

func servers(n int) string {
	if n == 1 {
		return "1 MCP server"
	}
	return fmt.Sprintf("%d MCP servers", n)
}

// EndSession ends a session: its token stops working, waiting calls are refused.
func (h *Handlers) EndSession(c echo.Context) error {
	id := c.Param("session")
	if _, err := h.RT.SessionEnd(ctx(c), principal(c), id); err != nil {
		return h.flashError(c, err, "/sessions/"+id)
	}
	h.flash(c, "ok", "Session ended.")
	return redirect(c, "/sessions/"+id)
}
