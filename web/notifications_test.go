package web_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/notify"
)

// consoleURL is the base URL the notifier writes into links; the tests open
// the same path on the test server.
const consoleURL = "https://console.example"

// mailbox is a real SMTP server (github.com/emersion/go-smtp) on loopback
// that requires AUTH PLAIN and keeps every message it accepts.
type mailbox struct {
	mu   sync.Mutex
	msgs []received
	url  string
}

type received struct {
	from string
	to   []string
	data []byte
}

const smtpUser, smtpPass = "subako", "mail-pass-never-logged"

func startMailbox(t *testing.T) *mailbox {
	t.Helper()
	mb := &mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &smtpSession{mb: mb}, nil }))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true // loopback, as net/smtp allows PLAIN over it
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	mb.url = "smtp://" + smtpUser + ":" + smtpPass + "@" + ln.Addr().String()
	return mb
}

func (mb *mailbox) messages() []received {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return slices.Clone(mb.msgs)
}

type smtpSession struct {
	mb     *mailbox
	authed bool
	cur    received
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != smtpUser || pass != smtpPass {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}
func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.cur = received{from: from}
	return nil
}
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = b
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, s.cur)
	s.mb.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        { s.cur = received{} }
func (s *smtpSession) Logout() error { return nil }

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
	mb := startMailbox(t)
	s, err := notify.ParseSMTP(mb.url, "subako@example.com")
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

	sess := w.session(w.vault)
	first := w.callAsync(sess.Token, sess.ID, getEnv, map[string]any{}, 0)
	if c := <-first; c.Status != "awaiting_approval" {
		t.Fatalf("the call is %q, want awaiting_approval", c.Status)
	}
	w.rt.DeliverNotifications(t.Context())

	got := map[string]received{}
	for _, m := range mb.messages() {
		for _, to := range m.to {
			got[to] = m
		}
	}
	if len(got) != 2 || got["ana@example.com"].data == nil || got["owner@example.com"].data == nil {
		t.Fatalf("emails went to %v; want Ana and the owner (may decide, subscribed), not Bo (grant loud only) nor Vic (viewer)", keys(got))
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got["ana@example.com"].data))
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
	for _, m := range mb.messages() {
		if slices.Contains(m.to, "bo@example.com") {
			toBo++
		}
	}
	if n := len(mb.messages()); n != 5 || toBo != 1 {
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
	if _, page := owner.get("/notifications"); strings.Contains(page, smtpPass) || !strings.Contains(page, "approvers by mail") {
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

// hookReceiver is a webhook endpoint on loopback that checks every request's
// signature with the channel's secret and answers with the statuses given.
type hookReceiver struct {
	t        *testing.T
	mu       sync.Mutex
	secret   string
	statuses []int
	bodies   [][]byte
	delivery []string
	hang     chan struct{} // when set, every request waits on it
	arrived  chan struct{}
	srv      *httptest.Server
}

const hookPath = "/services/T000/B000/url-path-is-a-secret"

func startReceiver(t *testing.T, statuses ...int) *hookReceiver {
	h := &hookReceiver{t: t, statuses: statuses, arrived: make(chan struct{}, 16)}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ts, _ := strconv.ParseInt(r.Header.Get(notify.HeaderTimestamp), 10, 64)
	h.mu.Lock()
	ok := r.URL.Path == hookPath && r.Header.Get("Content-Type") == "application/json" &&
		notify.Verify(h.secret, ts, body, r.Header.Get(notify.HeaderSignature))
	h.bodies = append(h.bodies, body)
	h.delivery = append(h.delivery, r.Header.Get(notify.HeaderDelivery))
	status := 200
	if n := len(h.bodies); n <= len(h.statuses) {
		status = h.statuses[n-1]
	}
	hang := h.hang
	h.mu.Unlock()
	h.arrived <- struct{}{}
	if !ok {
		h.t.Errorf("webhook request to %s with a bad signature or type", r.URL.Path)
		status = http.StatusUnauthorized
	}
	if hang != nil {
		<-hang
	}
	w.WriteHeader(status)
}

func (h *hookReceiver) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.bodies) }

// createHook creates a webhook channel over the API and hands its secret
// to the receiver.
func (w *world) createHook(h *hookReceiver, name, format string) runtime.ChannelView {
	w.t.Helper()
	var ch runtime.ChannelView
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": name, "kind": "webhook", "url": h.srv.URL + hookPath, "format": format}, &ch); st != 201 {
		w.t.Fatalf("Channel.create: %d", st)
	}
	if !strings.HasPrefix(ch.Secret, "whsec_") {
		w.t.Fatalf("Channel.create gave no signing secret: %+v", ch)
	}
	h.mu.Lock()
	h.secret = ch.Secret
	h.mu.Unlock()
	return ch
}

func (w *world) notification(channel string) runtime.NotificationView {
	w.t.Helper()
	var ns []runtime.NotificationView
	if st := w.api(w.owner, "GET", "/notifications?channel="+channel, nil, &ns); st != 200 || len(ns) != 1 {
		w.t.Fatalf("Notification.list?channel=%s: %d, %d notifications", channel, st, len(ns))
	}
	return ns[0]
}

func TestSignedWebhookIsRetriedWithBackoffAndRecorded(t *testing.T) {
	backoff := time.Minute
	w := newWorldWith(t, askConfig, runtime.Options{Notify: runtime.NotifyOptions{BaseURL: consoleURL, Backoff: backoff, Attempts: 5}})
	failing := startReceiver(t, 500, 503, 200)
	slack := startReceiver(t)
	hook := w.createHook(failing, "ops hook", "json")
	sl := w.createHook(slack, "ops slack", "slack")
	// A channel for another agent hears nothing of this one's calls.
	other := startReceiver(t)
	var ag struct{ ID string }
	if st := w.api(w.owner, "POST", "/agents", map[string]any{"name": "other"}, &ag); st != 201 {
		t.Fatalf("Agent.create: %d", st)
	}
	var p problem
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": "x", "kind": "webhook", "url": other.srv.URL + hookPath, "agents": []string{"nope"}}, &p); st != 422 || p.Field != "agents[0]" {
		t.Errorf("an unknown agent: %d %+v", st, p)
	}
	var oc runtime.ChannelView
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": "other only", "kind": "webhook", "url": other.srv.URL + hookPath, "agents": []string{"other"}}, &oc); st != 201 || len(oc.Agents) != 1 || oc.Agents[0] != ag.ID {
		t.Fatalf("Channel.create for one agent: %d %+v", st, oc)
	}

	sess := w.session(w.vault)
	<-w.callAsync(sess.Token, sess.ID, getEnv, map[string]any{}, 0)
	approvalID := w.pending(w.owner, "", 1)[0].ID

	w.rt.DeliverNotifications(t.Context())
	if n := w.notification(hook.ID); n.State != "pending" || len(n.Tries) != 1 || n.Tries[0].HTTPStatus != 500 || n.Tries[0].OK {
		t.Fatalf("after the first attempt: %s %+v", n.State, n.Tries)
	}
	w.rt.DeliverNotifications(t.Context()) // not due yet: the backoff holds it
	w.clock.Advance(backoff)
	w.rt.DeliverNotifications(t.Context())
	if failing.count() != 2 {
		t.Fatalf("after one backoff the receiver saw %d requests, want 2", failing.count())
	}
	w.clock.Advance(backoff) // the second wait is twice the first
	w.rt.DeliverNotifications(t.Context())
	if failing.count() != 2 {
		t.Fatalf("the second retry came after one backoff, not two (%d requests)", failing.count())
	}
	w.clock.Advance(backoff)
	w.rt.DeliverNotifications(t.Context())
	n := w.notification(hook.ID)
	if n.State != "delivered" || len(n.Tries) != 3 || n.Tries[1].HTTPStatus != 503 || n.Tries[2].HTTPStatus != 200 || !n.Tries[2].OK {
		t.Fatalf("after three attempts: %s %+v", n.State, n.Tries)
	}
	if failing.delivery[0] != n.ID || failing.delivery[2] != n.ID {
		t.Errorf("Subako-Delivery headers %v, want %s on every retry", failing.delivery, n.ID)
	}
	var payload struct {
		Type     string `json:"type"`
		URL      string `json:"url"`
		Approval struct {
			ID, Tool, Grant, By string
		} `json:"approval"`
	}
	if err := json.Unmarshal(failing.bodies[2], &payload); err != nil {
		t.Fatal(err)
	}
	link := consoleURL + "/approvals?approval=" + approvalID + "#approval-" + approvalID
	if payload.Type != "approval.pending" || payload.Approval.ID != approvalID || payload.Approval.Tool != getEnv ||
		payload.Approval.Grant != "everything" || payload.URL != link {
		t.Errorf("webhook body: %s", failing.bodies[2])
	}
	if bytes.Contains(failing.bodies[2], []byte("input")) {
		t.Errorf("the webhook carries the call's input: %s", failing.bodies[2])
	}
	var sb struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type     string `json:"type"`
			Elements []struct {
				Type, URL string
			} `json:"elements"`
		} `json:"blocks"`
	}
	if slack.count() != 1 || json.Unmarshal(slack.bodies[0], &sb) != nil || len(sb.Blocks) != 2 ||
		sb.Blocks[1].Elements[0].Type != "button" || sb.Blocks[1].Elements[0].URL != link {
		t.Errorf("Slack body: %s", slack.bodies)
	}
	if sn := w.notification(sl.ID); sn.State != "delivered" {
		t.Errorf("Slack notification: %s", sn.State)
	}
	if other.count() != 0 {
		t.Errorf("the channel of another agent was called %d times", other.count())
	}

	// The page shows every attempt; neither the secret nor the URL's path
	// appears in a page or an API answer after creation.
	owner := w.signIn("owner@example.com")
	_, page := owner.get("/notifications")
	if countTestID(page, "delivery-attempt") != 4 || !strings.Contains(page, "HTTP 503") {
		t.Errorf("the Notifications page shows %d attempts, want 4 with HTTP 503", countTestID(page, "delivery-attempt"))
	}
	_, list := w.rawAPI(w.owner, "GET", "/channels", "")
	for _, s := range []string{page, string(list)} {
		if strings.Contains(s, hook.Secret) || strings.Contains(s, "url-path-is-a-secret") {
			t.Errorf("a secret or the webhook's path shows after creation:\n%s", s)
		}
	}

	// Finished notifications go after the retention (30 days by default).
	w.clock.Advance(31 * 24 * time.Hour)
	w.rt.PruneNotifications(t.Context())
	var notices, attempts int64
	w.rt.DB().Model(&models.Notification{}).Count(&notices)
	w.rt.DB().Model(&models.NotificationAttempt{}).Count(&attempts)
	if notices != 0 || attempts != 0 {
		t.Errorf("after the retention %d notifications and %d attempts are left", notices, attempts)
	}
}

func TestCreatingAChannelRedirectsAndShowsTheSecretOnce(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	owner := w.signIn("owner@example.com")
	resp, _ := owner.post("/notifications/channels", url.Values{"name": {"pager"}, "kind": {"webhook"}, "format": {"slack"},
		"url": {"https://hooks.example.com" + hookPath}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/notifications" {
		t.Fatalf("creating a channel answered %d to %q, want a redirect", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := owner.get("/notifications")
	secret := regexp.MustCompile(`whsec_[a-z0-9]+`).FindString(page)
	if secret == "" || countTestID(page, "channel-row") != 1 {
		t.Fatalf("the page after creating shows no secret or no channel:\n%s", page)
	}
	if _, again := owner.get("/notifications"); strings.Contains(again, secret) || strings.Contains(again, "url-path-is-a-secret") {
		t.Error("the secret or the URL's path shows on a second view")
	}
	// Bad input names the field; a member may not manage channels.
	var p problem
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": "x", "kind": "webhook", "url": "ftp://example.com/"}, &p); st != 422 || p.Field != "url" {
		t.Errorf("a bad url: %d %+v", st, p)
	}
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": "mail", "kind": "email"}, &p); st != 422 || p.Code != "smtp_not_configured" {
		t.Errorf("email without --smtp-url: %d %+v", st, p)
	}
	member := w.person(owner, "mia@example.com", "member").token()
	if st := w.api(member, "POST", "/channels", map[string]any{"name": "x", "kind": "webhook", "url": "https://example.com/"}, &p); st != 403 || p.MissingPermission != "Channel.create" {
		t.Errorf("a member creating a channel: %d %+v", st, p)
	}
}

func TestAHangingWebhookDoesNotDelayTheCall(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{Notify: runtime.NotifyOptions{BaseURL: consoleURL, Timeout: time.Minute}})
	hanging := startReceiver(t)
	hanging.hang = make(chan struct{})
	t.Cleanup(func() { close(hanging.hang) }) // runs before the receiver closes
	w.createHook(hanging, "slow hook", "json")
	w.rt.StartNotifier(t.Context())

	sess := w.session(w.vault)
	waiting := w.callAsync(sess.Token, sess.ID, getEnv, map[string]any{}, 30)
	select { // the notifier is now stuck in the receiver
	case <-hanging.arrived:
	case <-time.After(time.Minute):
		t.Fatal("the webhook was never called")
	}
	id := w.pending(w.owner, "", 1)[0].ID
	// A second ask-first call is created and answers at once, as without a channel.
	if c := <-w.callAsync(sess.Token, sess.ID, getEnv, map[string]any{}, 0); c.Status != "awaiting_approval" {
		t.Fatalf("the second call is %q, want awaiting_approval", c.Status)
	}
	owner := w.signIn("owner@example.com")
	decideInConsole(owner, id, "approve", url.Values{"scope": {"call"}})
	if c := <-waiting; c.Status != "succeeded" {
		t.Fatalf("the approved call is %q (%s), want succeeded while the webhook still hangs", c.Status, c.Error)
	}
}
