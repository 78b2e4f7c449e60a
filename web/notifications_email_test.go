package web_test

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/notify"
	"github.com/subako/subako/runtime/notify/notifytest"
)

// signIn signs a person in through the login form.
func (e *env) signIn(email string) *client {
	e.t.Helper()
	b := e.browser()
	resp, _ := b.post("/login", url.Values{"email": {email}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("sign-in of %s answered %d", email, resp.StatusCode)
	}
	return b
}

var approvalLink = regexp.MustCompile(regexp.QuoteMeta(consoleURL) + `(/approvals\?approval=(apr_[a-z0-9]+)#approval-apr_[a-z0-9]+)`)

func TestApprovalEmailReachesSubscribedApproversAndLinksToTheDecision(t *testing.T) {
	mb := notifytest.StartMailpit(t)
	s, err := notify.ParseSMTP(mb.URL, "subako@example.com")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldWith(t, askConfig, runtime.Options{Notify: runtime.NotifyOptions{BaseURL: consoleURL, SMTP: s}})
	owner := w.signIn("owner@example.com")
	ana := w.person(owner, "ana@example.com", "member")
	bo := w.person(owner, "bo@example.com", "member")
	w.person(owner, "vic@example.com", "viewer") // may not decide: never emailed

	// Bo hears only of the "loud" grant; Ana keeps the default (everything
	// she may decide). A choice of nothing is refused, naming the field.
	if resp, page := bo.post("/notifications/subscription", url.Values{"mode": {"some"}}); resp.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(page, "choose at least one agent or grant") {
		t.Fatalf("an empty choice answered %d", resp.StatusCode)
	}
	if resp, _ := bo.post("/notifications/subscription", url.Values{"mode": {"some"}, "grants": {"loud"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving Bo's choice answered %d", resp.StatusCode)
	}
	if resp, page := owner.post("/notifications/channels", url.Values{"name": {"approvers by mail"}, "kind": {"email"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("creating the email channel answered %d:\n%s", resp.StatusCode, page)
	}

	// A second email channel sends no second email to anyone.
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": "backup mail", "kind": "email"}, nil); st != 201 {
		t.Fatalf("Channel.create (email): %d", st)
	}
	sess := w.session(w.vault)
	first := w.callAsync(sess.Token, sess.ID, getEnv, map[string]any{}, 0)
	if c := <-first; c.Status != "awaiting_approval" {
		t.Fatalf("the call is %q, want awaiting_approval", c.Status)
	}
	w.rt.DeliverNotifications(t.Context())

	got := map[string]notifytest.Message{}
	for _, m := range mb.Messages(t) {
		for _, to := range m.To {
			got[to] = m
		}
	}
	if len(mb.Messages(t)) != 2 || len(got) != 2 || got["ana@example.com"].Data == nil || got["owner@example.com"].Data == nil {
		t.Fatalf("emails went to %v; want Ana and the owner (may decide, subscribed), not Bo (grant loud only) nor Vic (viewer)", keys(got))
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got["ana@example.com"].Data))
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	body, _ := io.ReadAll(msg.Body)
	if !strings.Contains(subject, getEnv) || msg.Header.Get("From") != "subako@example.com" {
		t.Errorf("subject %q from %q: want the tool and the configured sender", subject, msg.Header.Get("From"))
	}
	m := approvalLink.FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("no link to the approval in the email:\n%s", body)
	}
	path, approvalID := m[1], m[2]

	// The link decides nothing by itself: opened signed out, it asks to sign in.
	if resp, _ := w.browser().get(path); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("the link signed out answered %d to %q, want the sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if qs := w.pending(w.owner, "", 1); qs[0].ID != approvalID {
		t.Fatalf("the pending approval is %s, the email named %s", qs[0].ID, approvalID)
	}
	// Signed in, it shows that approval alone with Approve and Deny.
	resp, page := ana.get(path)
	if resp.StatusCode != http.StatusOK || countTestID(page, "approval-item") != 1 || !strings.Contains(page, `data-approval="`+approvalID+`"`) ||
		countTestID(page, "approval-approve") != 1 || countTestID(page, "approval-deny") != 1 {
		t.Fatalf("the link shows %d approvals (status %d); want %s with Approve and Deny", countTestID(page, "approval-item"), resp.StatusCode, approvalID)
	}
	// One POST decides it.
	if flash := decideInConsole(ana, approvalID, "approve", url.Values{"scope": {"call"}}); !strings.Contains(flash, "Approved") {
		t.Errorf("flash after approving: %q", flash)
	}
	var decided []queued
	w.api(w.owner, "GET", "/approvals?state=approved", nil, &decided)
	if len(decided) != 1 || decided[0].DecidedBy != "ana@example.com" {
		t.Fatalf("approved: %+v", decided)
	}
	// Opened again, the link says where the approval went.
	if _, page := owner.get(path); countTestID(page, "approval-item") != 0 || !strings.Contains(page, "/approvals/history?q="+approvalID) {
		t.Errorf("the link after the decision shows %d approvals and no way to the history", countTestID(page, "approval-item"))
	}

	// A call under the "loud" grant reaches Bo too.
	<-w.callAsync(sess.Token, sess.ID, "mcp__loud__echo", map[string]any{"message": "hi"}, 0)
	w.rt.DeliverNotifications(t.Context())
	var toBo int
	for _, m := range mb.Messages(t) {
		if slices.Contains(m.To, "bo@example.com") {
			toBo++
		}
	}
	if n := len(mb.Messages(t)); n != 5 || toBo != 1 {
		t.Fatalf("after the loud call %d emails were sent, %d to Bo; want 5 in all, 1 to Bo", n, toBo)
	}

	var ns []runtime.NotificationView
	if st := w.api(w.owner, "GET", "/notifications?approval="+approvalID, nil, &ns); st != 200 || len(ns) != 2 {
		t.Fatalf("Notification.list: %d, %d notifications", st, len(ns))
	}
	for _, n := range ns {
		if n.State != "delivered" || len(n.Tries) != 1 || !n.Tries[0].OK {
			t.Errorf("notification to %s: %s with tries %+v", n.Recipient, n.State, n.Tries)
		}
	}
	if _, page := owner.get("/notifications"); strings.Contains(page, notifytest.Password) || !strings.Contains(page, "approvers by mail") {
		t.Error("the Notifications page shows the SMTP password, or not the channel")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
