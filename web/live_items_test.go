package web_test

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime"
)

// Live pages (issue 11): an open page receives only what changed, one item
// at a time, not the whole list again.

var queueStreamRe = regexp.MustCompile(`sse-connect="(/approvals/events[^"]*)"`)

// nextLiveEvent reads events until one that is not a heartbeat, up to 5 s.
func nextLiveEvent(t *testing.T, events <-chan queueEvent) queueEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
	}
	return queueEvent{}
}

// A second approval arriving while the Approvals page is open sends that
// approval alone (its card, placed after the one before it, and the count),
// not the queue with the first one again; its decision sends its removal
// alone. Each viewer's item says what they may do with it.
func TestApprovalEventsSendOnlyTheItemThatChanged(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	s := w.session(w.vault)
	owner := w.browserOf()
	viewer := w.person(owner, "viewer@example.com", "viewer")
	_, first := w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
	if first.Approval == nil {
		t.Fatalf("the first call did not ask: %+v", first)
	}
	cx, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	m := queueStreamRe.FindStringSubmatch(mustGet(owner, "/approvals"))
	if m == nil || !strings.Contains(m[1], "seen=") {
		t.Fatalf("the Approvals page's stream URL is %v", m)
	}
	_, events := openQueueEvents(t, cx, owner, html.UnescapeString(m[1]))
	vm := queueStreamRe.FindStringSubmatch(mustGet(viewer, "/approvals"))
	_, viewerEvents := openQueueEvents(t, cx, viewer, html.UnescapeString(vm[1]))
	time.Sleep(100 * time.Millisecond) // both streams are open before the next call
	w.clock.Advance(time.Second)       // the test's clock stands still: the second is asked later

	_, second := w.call(s.Token, s.ID, "mcp__loud__echo", map[string]any{"message": "second"}, 0)
	if second.Approval == nil {
		t.Fatalf("the second call did not ask: %+v", second)
	}
	// The page showed the first approval: the stream's first event is the second's arrival.
	ev := nextLiveEvent(t, events)
	a, b := `id="approval-`+first.Approval.ID+`"`, `id="approval-`+second.Approval.ID+`"`
	if ev.name != "item" || !strings.Contains(ev.data, b) || countTestID(ev.data, "approval-item") != 1 {
		t.Fatalf("the event after the second call is %q, not the second approval alone:\n%s", ev.name, ev.data)
	}
	if strings.Contains(ev.data, first.Approval.ID) && !strings.Contains(ev.data, `hx-swap-oob="afterend:#approval-`+first.Approval.ID+`"`) {
		t.Fatalf("the event carries the first approval again:\n%s", ev.data)
	}
	if strings.Contains(ev.data, a) || strings.Contains(ev.data, `id="approval-queue"`) {
		t.Fatalf("the event re-sends the queue or the first card:\n%s", ev.data)
	}
	// Oldest first: it goes after the first card; the count says 2; the approver may decide it.
	for _, want := range []string{`hx-swap-oob="afterend:#approval-` + first.Approval.ID + `"`, `data-pending="2"`,
		`data-testid="approval-approve"`, "mcp__loud__echo"} {
		if !strings.Contains(ev.data, want) {
			t.Fatalf("the item event lacks %s:\n%s", want, ev.data)
		}
	}
	vev := nextLiveEvent(t, viewerEvents)
	if vev.name != "item" || !strings.Contains(vev.data, b) || strings.Contains(vev.data, "approval-approve") ||
		!strings.Contains(vev.data, `data-testid="approval-read-only"`) {
		t.Fatalf("the viewer's item event (%q) is not the read-only card alone:\n%s", vev.name, vev.data)
	}

	// Denied: its card is taken away, and only its card.
	approver := w.person(owner, "approver@example.com", "member").token()
	if st := w.api(approver, "POST", "/approvals/"+second.Approval.ID+"/deny", map[string]any{}, nil); st != 200 {
		t.Fatalf("deny: %d", st)
	}
	ev = nextLiveEvent(t, events)
	if ev.name != "item" || !strings.Contains(ev.data, b+` hx-swap-oob="delete"`) || strings.Contains(ev.data, a) ||
		countTestID(ev.data, "approval-item") != 0 || !strings.Contains(ev.data, `data-pending="1"`) {
		t.Fatalf("the event after the denial (%q) is not the removal of its card alone:\n%s", ev.name, ev.data)
	}
	// The last one decided: its removal, and the empty state.
	if st := w.api(approver, "POST", "/approvals/"+first.Approval.ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve: %d", st)
	}
	ev = nextLiveEvent(t, events)
	if ev.name != "item" || !strings.Contains(ev.data, a+` hx-swap-oob="delete"`) || !strings.Contains(ev.data, "No calls are waiting") ||
		!strings.Contains(ev.data, `data-pending="0"`) {
		t.Fatalf("the event after the last decision (%q):\n%s", ev.name, ev.data)
	}
}

// The session page's call log sends a new call alone (placed first, as the
// log is newest first), then its row again as it finishes, never the log.
func TestSessionEventsSendOnlyTheCallThatChanged(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	_, first := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "first one"}, 10)
	if first.Status != "succeeded" {
		t.Fatalf("the first call: %+v", first)
	}
	m := sseConnectRe.FindStringSubmatch(mustGet(owner, "/sessions/"+s.ID))
	if m == nil {
		t.Fatal("no stream on the session page")
	}
	ev := owner.events(html.UnescapeString(m[1]))
	time.Sleep(100 * time.Millisecond)
	w.clock.Advance(time.Second) // the test's clock stands still: the second is made later
	_, second := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "second one"}, 10)
	row := `id="call-row-` + second.ID + `"`
	for {
		name, data := ev.next(t)
		if name == "calls" {
			t.Fatalf("the whole call log was sent again:\n%s", data)
		}
		if name != "call" {
			continue
		}
		if !strings.Contains(data, row) || strings.Contains(data, first.ID) || strings.Contains(data, "first one") ||
			countTestID(data, "call-row") != 1 {
			t.Fatalf("a call event is not the second call's row alone:\n%s", data)
		}
		if strings.Contains(data, `hx-swap-oob="afterend:#call-log-head"`) && strings.Contains(data, "Echo: second one") {
			break // it arrived finished
		}
		if strings.Contains(data, `hx-swap-oob="true"`) && strings.Contains(data, "Echo: second one") {
			break // it arrived running, then finished in place
		}
	}
}
