package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Live pages (issue 11) in Chromium: an approval appears and leaves the open
// queue by itself; the cards already there are not rendered again, so a mark
// the test puts on one, and a reason half typed into it, survive.
func TestBrowserApprovalItemsComeAndGoAlone(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	w.person(w.browserOf(), "approver@example.com", "member")
	_, first := w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
	if first.Approval == nil {
		t.Fatalf("the first call did not ask: %+v", first)
	}
	ctx := browserCtx(t)
	signIn(t, ctx, w, "approver@example.com")
	card := fmt.Sprintf(`document.querySelector("[data-approval=%s]")`, first.Approval.ID)
	steps(t, ctx, "open the queue and mark the first card",
		chromedp.Navigate(w.srv.URL+"/approvals"),
		chromedp.WaitVisible(css(`[data-approval=`+first.Approval.ID+`]`)),
		void(chromedp.Evaluate[bool](`window.notReloaded = true; `+card+`.setAttribute("data-mark", "kept"); true`)),
		chromedp.SetValue(css(`[data-approval=`+first.Approval.ID+`] [data-testid=approval-reason]`), "half typed"),
	)
	kept := card + `?.getAttribute("data-mark") === "kept" && ` + card + `.querySelector("[data-testid=approval-reason]").value === "half typed" && window.notReloaded === true`
	steps(t, ctx, "the queue's stream is open",
		watchDOM(`document.querySelector("[data-testid=approval-live]").getAttribute("data-live") === "open"`, 10*time.Second))

	w.clock.Advance(time.Second)
	_, second := w.call(s.Token, s.ID, getEnv, map[string]any{"x": 1}, 0)
	if second.Approval == nil {
		t.Fatalf("the second call did not ask: %+v", second)
	}
	order := `Array.from(document.querySelectorAll("[data-testid=approval-item]")).map(e => e.getAttribute("data-approval")).join(",")`
	steps(t, ctx, "the second appears after the first, which is left alone",
		watchDOM(order+fmt.Sprintf(` === %q && `, first.Approval.ID+","+second.Approval.ID)+kept, 10*time.Second),
		watchDOM(`document.title === "(2) Approvals · Subako" && document.querySelector("[data-testid=tab-pending]").textContent === "2"`, 5*time.Second),
	)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=approval-queue] [data-testid=empty]").length`)); err != nil || n != 0 {
		t.Fatalf("the empty state shows beside the cards (%d, %v)", n, err)
	}
	screenshot(ctx, t, "approvals-live-items")

	if st := w.api(w.owner, "POST", "/approvals/"+second.Approval.ID+"/deny", map[string]any{}, nil); st != 200 {
		t.Fatalf("deny: %d", st)
	}
	steps(t, ctx, "the second leaves; the first is still the one marked",
		watchDOM(order+fmt.Sprintf(` === %q && `, first.Approval.ID)+kept, 10*time.Second),
		watchDOM(`document.title === "(1) Approvals · Subako"`, 5*time.Second),
	)
	if st := w.api(w.owner, "POST", "/approvals/"+first.Approval.ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve: %d", st)
	}
	steps(t, ctx, "the last leaves and the queue says nothing waits",
		watchDOM(`document.querySelectorAll("[data-testid=approval-item]").length === 0 && document.querySelector("[data-testid=approval-queue] [data-testid=empty]") !== null && window.notReloaded === true`, 10*time.Second),
		watchDOM(`document.title === "Approvals · Subako"`, 5*time.Second),
	)
}

// The session page's call log takes a new call at its top, by itself: the
// row already shown (marked by the test, its details opened) is not redrawn.
func TestBrowserSessionCallLogAddsOnlyTheNewCall(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	_, first := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "first one"}, 10)
	ctx := browserCtx(t)
	signIn(t, ctx, w, "owner@example.com")
	row := fmt.Sprintf(`document.querySelector("[data-testid=call-row][data-call=%s]")`, first.ID)
	steps(t, ctx, "open the session and mark its call",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID),
		poll(`document.querySelector("[data-testid=session-live]").getAttribute("data-live") === "open"`),
		void(chromedp.Evaluate[bool](`window.notReloaded = true; `+row+`.setAttribute("data-mark", "kept"); `+row+`.querySelector("details").open = true; true`)),
	)
	w.clock.Advance(time.Second) // the test's clock stands still: the second is made later
	_, second := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "second one"}, 10)
	rows := `Array.from(document.querySelectorAll("[data-testid=call-row]")).map(e => e.getAttribute("data-call")).join(",")`
	steps(t, ctx, "the new call is first, finished; the marked row is untouched",
		watchDOM(rows+fmt.Sprintf(` === %q`, second.ID+","+first.ID)+` && `+row+`.getAttribute("data-mark") === "kept" && `+row+
			`.querySelector("details").open && window.notReloaded === true && document.querySelector("[data-call=`+second.ID+`] [data-testid=call-output]")?.textContent.includes("Echo: second one")`, 10*time.Second),
	)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=call-log]").length`)); err != nil || n != 1 {
		t.Fatalf("the page has %d call logs (%v)", n, err)
	}
}
