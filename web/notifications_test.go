package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/notify"
)

// consoleURL is the base URL the notifier writes into links; the tests open
// the same path on the test server.
const consoleURL = "https://console.example"

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
	return w.createHookAt(h, h.srv.URL+hookPath, name, format)
}

// createHookAt is createHook with the URL given, such as the receiver by a name.
func (w *world) createHookAt(h *hookReceiver, url, name, format string) runtime.ChannelView {
	w.t.Helper()
	var ch runtime.ChannelView
	if st := w.api(w.owner, "POST", "/channels", map[string]any{"name": name, "kind": "webhook", "url": url, "format": format}, &ch); st != 201 {
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
	// In the database, the URL and the secret are sealed: a dump shows neither.
	var rows []map[string]any
	w.rt.DB().Table("notification_channels").Find(&rows)
	if len(rows) != 1 {
		t.Fatalf("%d channel rows", len(rows))
	}
	for col, v := range rows[0] {
		text := fmt.Sprint(v)
		if b, ok := v.([]byte); ok {
			text = string(b)
		}
		if strings.Contains(text, secret) || strings.Contains(text, "url-path-is-a-secret") {
			t.Errorf("column %s holds the secret or the URL in the clear", col)
		}
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
