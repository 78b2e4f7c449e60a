package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// Approve is Approval.approve from a console form (the session page, the
// approvals queue): fields reason, scope (call or session) and back, the
// local page to return to.
func (h *Handlers) Approve(c echo.Context) error {
	in := runtime.DecisionInput{Approval: c.Param("approval"), Reason: c.FormValue("reason"), Scope: c.FormValue("scope")}
	back := localPath(c.FormValue("back"), "/approvals")
	if _, err := h.RT.ApprovalApprove(ctx(c), principal(c), in); err != nil {
		return h.flashError(c, err, back)
	}
	msg := "Approved: the call runs."
	if in.Scope == "session" {
		msg = "Approved, and allowed without asking for the rest of this session."
	}
	h.flash(c, "ok", msg)
	return redirect(c, back)
}

// Deny is Approval.deny from a console form; the reason goes back to the caller.
func (h *Handlers) Deny(c echo.Context) error {
	in := runtime.DecisionInput{Approval: c.Param("approval"), Reason: c.FormValue("reason"), Scope: c.FormValue("scope")}
	back := localPath(c.FormValue("back"), "/approvals")
	if _, err := h.RT.ApprovalDeny(ctx(c), principal(c), in); err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Denied: the caller is told.")
	return redirect(c, back)
}

// sessionPendingMax is the most approvals one read of the queue returns.
const sessionPendingMax = 500

// localPath keeps a form's "back" on this site: anything that could leave it
// (another host, a scheme, a protocol-relative or backslashed path) falls back.
func localPath(back, fallback string) string {
	u, err := url.Parse(back)
	if err != nil || !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") ||
		strings.Contains(back, `\`) || u.Scheme != "" || u.Host != "" {
		return fallback
	}
	return back
}

// AnswerQuestion answers an ask_user call as the operator (ToolCall.complete):
// a picked choice, or the typed answer.
func (h *Handlers) AnswerQuestion(c echo.Context) error {
	back := "/sessions/" + c.Param("session")
	answer := c.FormValue("choice")
	if answer == "" {
		answer = strings.TrimSpace(c.FormValue("answer"))
	}
	if answer == "" {
		h.flash(c, "error", "Type an answer or pick a choice.")
		return redirect(c, back)
	}
	out, _ := json.Marshal(map[string]string{"answer": answer})
	if _, err := h.RT.ToolCallComplete(ctx(c), principal(c), runtime.CompleteInput{Call: c.Param("call"), Output: out}); err != nil {
		return h.flashError(c, err, back)
	}
	h.flash(c, "ok", "Answer sent.")
	return redirect(c, back)
}

// RevokeSessionRule revokes an "allow for this session" rule from the session page.
func (h *Handlers) RevokeSessionRule(c echo.Context) error {
	id := c.Param("session")
	if err := h.RT.SessionRuleRevoke(ctx(c), principal(c), id, c.Param("rule")); err != nil {
		return h.flashError(c, err, "/sessions/"+id)
	}
	h.flash(c, "ok", "Rule revoked: the tool asks first again in this session.")
	return redirect(c, "/sessions/"+id)
}

// APISessionRuleList is SessionRule.list.
func (h *Handlers) APISessionRuleList(c echo.Context) error {
	out, err := h.RT.SessionRuleList(ctx(c), principal(c), c.Param("session"))
	return answer(c, http.StatusOK, out, err)
}

// APISessionRuleRevoke is SessionRule.revoke.
func (h *Handlers) APISessionRuleRevoke(c echo.Context) error {
	return answerEmpty(c, h.RT.SessionRuleRevoke(ctx(c), principal(c), c.Param("session"), c.Param("rule")))
}

// pendingView is what waits on a person in this session: its approvals that
// can still be decided, oldest first, and its ask_user questions. The queue
// filters by session in the database, so approvals pending in other sessions
// never crowd this session's out of the read.
func (h *Handlers) pendingView(cx context.Context, p runtime.Principal, id string, calls []runtime.ToolCallView) (pages.SessionPending, error) {
	v := pages.SessionPending{SessionID: id, Back: "/sessions/" + id,
		CanDecide: p.Can("Approval.approve"), CanAnswer: p.Can("ToolCall.complete")}
	queue, err := h.RT.ApprovalQueue(cx, p, runtime.QueueFilter{State: runtime.ApprovalPending, Session: id, Limit: sessionPendingMax})
	if err != nil {
		return v, err
	}
	for _, it := range queue.Items {
		v.Approvals = append(v.Approvals, pages.SessionApproval{ID: it.ID, Call: it.Call, Tool: it.Tool, By: it.By,
			Model: it.Model, Input: prettyJSON(it.Input), Asked: isoTime(it.CreatedAt), Waited: waited(it.CreatedAt),
			Decidable: it.DecidableBy(p), Own: it.OwnCall(p)})
	}
	for i := len(calls) - 1; i >= 0; i-- {
		if q, ok := question(calls[i]); ok {
			v.Questions = append(v.Questions, q)
		}
	}
	return v, nil
}

// question reads an ask_user call that waits for an answer.
func question(c runtime.ToolCallView) (pages.SessionQuestion, bool) {
	kind, grant, _, err := tools.ParseFullName(c.Tool)
	if err != nil || kind != tools.KindBuiltin || grant != tools.BuiltinAskUser || c.Status != runtime.CallWaitingClient {
		return pages.SessionQuestion{}, false
	}
	var in struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	_ = json.Unmarshal(c.Input, &in)
	return pages.SessionQuestion{Call: c.ID, Question: in.Question, Choices: in.Choices, Asked: isoTime(c.CreatedAt)}, true
}

func (h *Handlers) rulesView(cx context.Context, p runtime.Principal, id string) (pages.SessionRules, error) {
	v := pages.SessionRules{SessionID: id, CanRevoke: p.Can("SessionRule.revoke")}
	rules, err := h.RT.SessionRuleList(cx, p, id)
	if err != nil {
		return v, err
	}
	for _, r := range rules {
		v.Rules = append(v.Rules, pages.SessionRuleRow{ID: r.ID, Tool: r.Tool, Policy: r.Policy, By: r.CreatedBy, Created: isoTime(r.CreatedAt)})
	}
	return v, nil
}

// waited says how long something has waited, the way a person reads it.
func waited(since time.Time) string {
	d := max(time.Since(since), 0)
	switch {
	case d < time.Minute:
		// Coarse on purpose: the live page re-sends a part only when its text changes.
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%.1f h", d.Hours())
}
