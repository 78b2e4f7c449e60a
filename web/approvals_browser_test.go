package web_test

// What an approver's open page receives: the queue's event stream as the
// browser's EventSource reads it, then the whole page in headless Chromium.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime"
)

// pollFront waits until a JavaScript condition holds in the front tab, up to d;
// it re-checks on every animation frame, which a background tab never has.
func pollFront(cond string, d time.Duration) chromedp.Action[chromedp.Void] {
	return void(pollAgain[bool](cond, d))
}

// watchDOM waits until a condition on the page's content holds, up to d, checking
// on every change to the DOM: it works in a background tab too.
func watchDOM(cond string, d time.Duration) chromedp.Action[chromedp.Void] {
	return void(pollAgain[bool](cond, d, chromedp.WithPollingMutation()))
}

func receiveCall(t *testing.T, waiting <-chan call) call {
	t.Helper()
	select {
	case c := <-waiting:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting API call did not return")
		return call{}
	}
}

const queueItems = `document.querySelectorAll("[data-testid=approval-item]").length`

func TestBrowserApproverDecidesLive(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	w.person(w.browserOf(), "approver@example.com", "member")
	ctx := browserCtx(t)
	run := func(cx context.Context, what string, a ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		steps(t, cx, what, a...)
	}
	run(ctx, "sign in as the approver and open the queue",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "approver@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(w.srv.URL+"/approvals"),
		chromedp.WaitVisible(css(`[data-testid=approval-queue] [data-testid=empty]`)),
		void(chromedp.Evaluate[bool](`window.notReloaded = true`)),
	)
	// A second approver's tab (same person, same browser) watches the same queue.
	other, closeOther := chromedp.NewContext(ctx)
	defer closeOther()
	run(other, "open the queue in a second tab",
		chromedp.Navigate(w.srv.URL+"/approvals"),
		chromedp.WaitVisible(css(`[data-testid=approval-queue] [data-testid=empty]`)),
	)
	if _, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{}); err != nil {
		t.Fatalf("bring the first tab to the front: %v", err)
	}

	// An ask-first call arrives: it appears on both pages within a second, without a reload.
	waiting := w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 30)
	w.pending(w.owner, "", 1)
	run(ctx, "the call appears live", watchDOM(queueItems+` === 1`, time.Second))
	run(other, "the call appears in the other tab", watchDOM(queueItems+` === 1`, time.Second))
	run(ctx, "without a reload, with the count in the title and the navigation",
		watchDOM(`window.notReloaded === true && document.title === "(1) Approvals · Subako"`, time.Second),
		watchDOM(`document.querySelector("[data-testid=nav-approvals] .nav-count")?.textContent === "1"`, time.Second),
	)
	if tool := text(t, ctx, `[data-testid=approval-tool]`); tool != getEnv {
		t.Fatalf("the item shows the tool %q", tool)
	}
	screenshot(ctx, t, "approvals-queue")

	// One click approves; the agent's call returns the tool's output.
	run(ctx, "approve", chromedp.Click(css(`[data-testid=approval-approve]`)), chromedp.WaitVisible(css(`[data-testid=flash]`)))
	if c := receiveCall(t, waiting); c.Status != "succeeded" || !strings.Contains(string(c.Output), "GZIP_ALLOWED_DOMAINS") {
		t.Fatalf("the approved call returned %+v", c)
	}
	run(other, "the decided item leaves the other tab",
		watchDOM(queueItems+` === 0 && document.title === "Approvals · Subako"`, 2*time.Second),
		watchDOM(`document.querySelector("[data-testid=nav-approvals] .nav-count") === null`, time.Second),
	)

	// Deny from the keyboard: j focuses the item, d the reason; the agent reads the reason.
	waiting = w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 30)
	w.pending(w.owner, "", 1)
	run(ctx, "the next call appears", watchDOM(queueItems+` === 1`, time.Second))
	run(ctx, "deny with a reason",
		chromedp.KeyEvent("j"),
		pollFront(`document.activeElement.matches("[data-testid=approval-item]")`, time.Second),
		chromedp.KeyEvent("d"),
		pollFront(`document.activeElement.matches("[data-testid=approval-reason]")`, time.Second),
		chromedp.KeyEvent("not during the freeze"),
		// The approval's flash is still on the page: clear it, so the next one is the denial's.
		void(chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=flash]").forEach(f => f.remove()); 0`)),
		chromedp.Click(css(`[data-testid=approval-deny]`)),
		chromedp.WaitVisible(css(`[data-testid=flash]`)),
	)
	if c := receiveCall(t, waiting); c.Status != "refused" || !strings.Contains(c.Reason, "not during the freeze") {
		t.Fatalf("the denied call returned %+v", c)
	}
	run(ctx, "the queue is empty again", watchDOM(queueItems+` === 0`, 2*time.Second))
}

// queueEvent is one server-sent event as a browser's EventSource assembles it.
type queueEvent struct{ name, data string }

// openEvents reads an event stream in the background; close the context to hang up.
func openQueueEvents(t *testing.T, cx context.Context, b *client, path string) (*http.Response, <-chan queueEvent) {
	t.Helper()
	req, _ := http.NewRequestWithContext(cx, http.MethodGet, b.e.srv.URL+path, nil)
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan queueEvent, 16)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		var ev queueEvent
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = queueEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if ev.data != "" {
					ev.data += "\n"
				}
				ev.data += strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, ":"):
			default:
				ev.name = fmt.Sprintf("malformed line %q", line)
			}
		}
	}()
	return resp, out
}

func nextQueueEvent(t *testing.T, events <-chan queueEvent, want string) queueEvent {
	t.Helper()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended waiting for %q", want)
			}
			// The whole queue on connecting, then an approval at a time (issue 11).
			if ev.name != "queue" && ev.name != "item" && ev.name != "count" {
				t.Fatalf("unexpected event %q", ev.name)
			}
			if strings.Contains(ev.data, want) {
				return ev
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event with %q within 5 s", want)
		}
	}
}

func TestApprovalEventsStreamTheQueue(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	s := w.session(w.vault)
	owner := w.browserOf()
	viewer := w.person(owner, "viewer@example.com", "viewer")
	cx, hangUp := context.WithCancel(t.Context())
	defer hangUp()
	resp, events := openQueueEvents(t, cx, owner, "/approvals/events")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("event stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	nextQueueEvent(t, events, "No calls are waiting")
	_, viewerEvents := openQueueEvents(t, cx, viewer, "/approvals/events")
	nextQueueEvent(t, viewerEvents, "No calls are waiting")

	_, c := w.call(s.Token, s.ID, "mcp__loud__echo", map[string]any{"message": "hello"}, 0)
	ev := nextQueueEvent(t, events, "mcp__loud__echo")
	// The input is pretty-printed over three lines: each must arrive on its own data line.
	if !strings.Contains(ev.data, `data-pending="1"`) || !strings.Contains(ev.data, `data-testid="approval-approve"`) ||
		!strings.Contains(ev.data, "{\n  <span class=\"j-key\">") {
		t.Fatalf("the pushed queue:\n%s", ev.data)
	}
	if vev := nextQueueEvent(t, viewerEvents, "mcp__loud__echo"); strings.Contains(vev.data, "approval-approve") {
		t.Fatal("a viewer's stream offers decisions")
	}
	approver := w.person(owner, "approver@example.com", "member").token()
	w.api(approver, "POST", "/approvals/"+c.Approval.ID+"/approve", map[string]any{}, nil)
	if ev := nextQueueEvent(t, events, "No calls are waiting"); !strings.Contains(ev.data, `data-pending="0"`) {
		t.Fatalf("after the decision:\n%s", ev.data)
	}

	// Without a signed-in browser there is no stream, only the way to sign in.
	if resp, _ := w.browser().get("/approvals/events"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("anonymous event stream: %d", resp.StatusCode)
	}
}
