package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/views/pages"
)

// queueFilter reads Approval.list's filters from the query string, the same
// for the API, the page and its live updates.
func queueFilter(c echo.Context) (runtime.QueueFilter, error) {
	q := c.QueryParams()
	f := runtime.QueueFilter{State: q.Get("state"), Agent: q.Get("agent"), Session: q.Get("session"), Grant: q.Get("grant"),
		Tool: q.Get("tool"), Q: q.Get("q"), Order: q.Get("order"), Approval: q.Get("approval"), Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return f, &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_limit", Title: "Invalid query", Field: "limit",
				Detail: "limit must be a whole number between 1 and 500"}
		}
		f.Limit = n
	}
	return f, nil
}

// filterQuery is the part of a URL that carries the queue's filters.
func filterQuery(f runtime.QueueFilter) string { return filterValues(f).Encode() }

func filterValues(f runtime.QueueFilter) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"agent": f.Agent, "session": f.Session, "grant": f.Grant, "tool": f.Tool, "order": f.Order, "approval": f.Approval} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

func withQuery(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

// pendingFilter is the queue page's filter: it always shows what waits.
func pendingFilter(c echo.Context) (runtime.QueueFilter, error) {
	f, err := queueFilter(c)
	f.State, f.Q, f.Limit, f.Cursor = runtime.ApprovalPending, "", 0, ""
	return f, err
}

// Approvals is the approver's page: what waits, oldest first, live.
func (h *Handlers) Approvals(c echo.Context) error {
	f, err := pendingFilter(c)
	if err != nil {
		return err
	}
	p := principal(c)
	q, err := h.RT.ApprovalQueue(ctx(c), p, f)
	if err != nil {
		return err
	}
	qv := queueView(p, q, f)
	events := filterValues(f)
	events.Set("seen", queueSeen(qv))
	fv := pages.ApprovalFilterView{Agent: f.Agent, Session: f.Session, Grant: f.Grant, Tool: f.Tool, Order: f.Order,
		Grants: q.Grants, Tools: q.Tools, EventsURL: "/approvals/events?" + events.Encode()}
	for _, a := range q.Agents {
		fv.Agents = append(fv.Agents, pages.Option{Value: a.Value, Label: a.Label})
	}
	for _, s := range q.Sessions {
		fv.Sessions = append(fv.Sessions, pages.Option{Value: s.Value, Label: s.Label})
	}
	s := h.shell(c, approvalsTitle(q.Pending), "approvals")
	s.Pending = q.Pending
	return render(c, http.StatusOK, pages.ApprovalsPage(s, fv, qv))
}

// approvalsTitle puts the count first, where a browser tab shows it.
func approvalsTitle(pending int) string {
	if pending == 0 {
		return "Approvals"
	}
	return fmt.Sprintf("(%d) Approvals", pending)
}

func queueView(p runtime.Principal, q runtime.Queue, f runtime.QueueFilter) pages.ApprovalQueueView {
	v := pages.ApprovalQueueView{Pending: q.Pending, CanDecide: p.Can("Approval.approve"),
		Back: withQuery("/approvals", filterQuery(f)), Filtered: f.Agent != "" || f.Session != "" || f.Grant != "" || f.Tool != "" || f.Approval != "", Approval: f.Approval}
	for _, it := range q.Items {
		item := approvalItem(it)
		item.Decidable, item.Own = it.DecidableBy(p), it.OwnCall(p)
		v.Items = append(v.Items, item)
	}
	return v
}

func approvalItem(it runtime.QueueItem) pages.ApprovalItem {
	out := pages.ApprovalItem{ID: it.ID, Call: it.Call, Tool: it.Tool, Kind: it.Kind, Grant: it.Grant, FromRule: it.PolicySource == "rule", Why: it.PolicyRule,
		Agent: it.Agent, AgentName: it.AgentName, Version: it.Version, VersionNumber: it.VersionNumber, Session: it.Session,
		SessionTitle: it.SessionTitle, Model: it.Model, By: it.By, AskedAt: isoTime(it.CreatedAt), AskedUnix: it.CreatedAt.Unix(),
		Waited: fmtWait(time.Duration(it.WaitedMS) * time.Millisecond), Input: approvalInput(it.Input, it.InputTruncated),
		State: it.State, Scope: it.Scope, Reason: it.Reason, DecidedBy: it.DecidedBy, DecidedAt: isoTimePtr(it.DecidedAt)}
	if out.AgentName == "" {
		out.AgentName = it.Agent
	}
	if out.SessionTitle == "" {
		out.SessionTitle = it.Session
	}
	return out
}

// fmtWait says how long in the largest two units that matter to a person.
func fmtWait(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// ApprovalHistory lists decided and expired approvals, newest first, searchable.
func (h *Handlers) ApprovalHistory(c echo.Context) error {
	f, err := queueFilter(c)
	if err != nil {
		return err
	}
	if f.State == "" || f.State == runtime.ApprovalPending {
		f.State = runtime.ApprovalDecided
	}
	f.Limit = runtime.PageSize
	q, err := h.RT.ApprovalQueue(ctx(c), principal(c), f)
	if err != nil {
		return err
	}
	v := pages.ApprovalHistoryView{Q: f.Q, State: f.State, Pending: q.Pending, Limit: f.Limit}
	links := filterValues(f)
	links.Set("q", f.Q)
	links.Set("state", f.State)
	pg := pagerOf("/approvals/history", links, f.Cursor, q.Links)
	v.Newer, v.Older = pg.Newer, pg.Older
	for _, it := range q.Items {
		v.Items = append(v.Items, approvalItem(it))
	}
	s := h.shell(c, approvalsTitle(q.Pending), "approvals")
	s.Pending = q.Pending
	return render(c, http.StatusOK, pages.ApprovalHistoryPage(s, v))
}

// Limits of how an input is shown: past these it is collapsed behind "Show all".
const (
	previewLines = 12
	previewBytes = 1200
)

// approvalInput pretty-prints and highlights a call's input on the server, so
// the page needs no script and no inline style to show it readably.
func approvalInput(raw []byte, truncated bool) pages.ApprovalInput {
	var buf bytes.Buffer
	text := string(raw)
	if json.Indent(&buf, raw, "", "  ") == nil {
		text = buf.String()
	}
	in := pages.ApprovalInput{Spans: highlightJSON(text), Lines: strings.Count(text, "\n") + 1, Truncated: truncated, Texts: multilineFields(raw)}
	if in.Lines <= previewLines+4 && len(text) <= previewBytes {
		return in
	}
	in.Long = true
	cut := text
	if i := nthIndex(cut, '\n', previewLines); i >= 0 {
		cut = cut[:i]
	}
	if len(cut) > previewBytes {
		cut = strings.ToValidUTF8(cut[:previewBytes], "")
	}
	in.Preview = highlightJSON(cut)
	return in
}

// multilineFields are the input's top-level strings that span lines, in
// field order, for reading as text beside the JSON.
func multilineFields(raw []byte) []pages.ApprovalText {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	var out []pages.ApprovalText
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		var s string
		if json.Unmarshal(fields[k], &s) == nil && strings.Contains(strings.TrimRight(s, "\n"), "\n") {
			out = append(out, pages.ApprovalText{Field: k, Text: s, Lines: strings.Count(strings.TrimRight(s, "\n"), "\n") + 1})
		}
	}
	return out
}

func nthIndex(s string, b byte, n int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// highlightJSON splits indented JSON into classed spans. It never fails: text
// it does not recognise (a cut preview, a truncated record) stays plain.
func highlightJSON(s string) []pages.JSONSpan {
	var out []pages.JSONSpan
	plain := 0 // start of the plain run not yet emitted
	emit := func(start, end int, class string) {
		if plain < start {
			out = append(out, pages.JSONSpan{Text: s[plain:start]})
		}
		out = append(out, pages.JSONSpan{Class: class, Text: s[start:end]})
		plain = end
	}
	for i := 0; i < len(s); {
		end, class := jsonToken(s, i)
		if class == "" {
			i++
			continue
		}
		emit(i, end, class)
		i = end
	}
	if plain < len(s) {
		out = append(out, pages.JSONSpan{Text: s[plain:]})
	}
	return out
}

// jsonToken reads the token at i: its end and class, or "" for punctuation.
func jsonToken(s string, i int) (int, string) {
	switch ch := s[i]; {
	case ch == '"':
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		j = min(j+1, len(s))
		k := j
		for k < len(s) && (s[k] == ' ' || s[k] == '\n') {
			k++
		}
		if k < len(s) && s[k] == ':' {
			return j, "key"
		}
		return j, "str"
	case ch == '-' || ch >= '0' && ch <= '9':
		j := i + 1
		for j < len(s) && strings.IndexByte("0123456789+-.eE", s[j]) >= 0 {
			j++
		}
		return j, "num"
	case strings.HasPrefix(s[i:], "true"):
		return i + 4, "bool"
	case strings.HasPrefix(s[i:], "false"):
		return i + 5, "bool"
	case strings.HasPrefix(s[i:], "null"):
		return i + 4, "null"
	}
	return i + 1, ""
}

// ApprovalEvents streams the queue as server-sent events: whole on
// connecting unless the page showed it moments ago (a reconnecting page may
// have missed changes), then, after every approval or session change, only
// the approvals that arrived, changed or left (queueLive). The runtime's events are hints to re-read, so
// every update is a fresh Approval.list under the viewer's current access:
// a person signed out or removed stops receiving at the next change.
func (h *Handlers) ApprovalEvents(c echo.Context) error {
	f, err := pendingFilter(c)
	if err != nil {
		return err
	}
	// A session's end expires its approvals too. A change to who may do
	// what (unseated, removed, access changed) re-reads the queue as the
	// person now stands: refused, it ends.
	matters := func(ev runtime.Event) bool {
		return ev.Kind == "approval" || ev.Kind == "session" || ev.Kind == runtime.EventAccess
	}
	events, stop := h.RT.Subscribe(matters)
	defer stop()
	hd := c.Response().Header()
	hd.Set(echo.HeaderContentType, "text/event-stream")
	hd.Set(echo.HeaderCacheControl, "no-store")
	out := newSSEStream(c.Response(), c.QueryParam("seen"))
	sid, _ := c.Get(webSIDKey).(string)
	beat := time.NewTicker(sseHeartbeat)
	defer beat.Stop()
	p := principal(c)
	var sent queueLive
	for {
		err := h.pushQueue(c, out, &sent, p, f)
		if err != nil && !c.Response().Committed {
			return err // refused before the stream started: the client gets a status
		}
		if err != nil {
			if e, ok := runtime.AsError(err); !ok || e.Kind == runtime.KindInternal {
				h.Log.Warn("approval events: stream ended", "err", err)
			}
			return nil
		}
		if !out.await(ctx(c), events, beat.C, matters) {
			return nil
		}
		if p, err = h.RT.AuthenticateSession(ctx(c), sid); err != nil {
			return nil
		}
	}
}

func (h *Handlers) pushQueue(c echo.Context, out *sseStream, sent *queueLive, p runtime.Principal, f runtime.QueueFilter) error {
	// The update goes out first; the re-read's Action is written after it.
	cx, record := h.RT.DeferActions(ctx(c))
	defer record()
	f.NoChoices = true // the stream sends cards and the count, not the filters
	q, err := h.RT.ApprovalQueue(cx, p, f)
	if err != nil {
		return err
	}
	if !c.Response().Committed {
		// Through echo, so it knows: the send below may skip an unchanged queue.
		c.Response().WriteHeader(http.StatusOK)
	}
	if err := sent.push(ctx(c), out, queueView(p, q, f)); err != nil {
		return err
	}
	return http.NewResponseController(out.w).Flush()
}

// ApprovalLink answers a link to one approval (a guessed or shared
// /approvals/ID) with the queue showing just that approval, where it can be
// decided or read as decided.
func (h *Handlers) ApprovalLink(c echo.Context) error {
	id := url.QueryEscape(c.Param("approval"))
	return c.Redirect(http.StatusSeeOther, "/approvals?approval="+id+"#approval-"+id)
}
