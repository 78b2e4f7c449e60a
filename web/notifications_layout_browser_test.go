package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/vault"
)

// A delivery that failed a few times carries long errors (the egress guard's
// says how to allow the address). On a phone the deliveries table scrolls
// sideways; its Attempts column must stay wide enough to read them, not
// squeezed to a strip a few words wide that makes the row a screen tall.
func TestBrowserFailedDeliveriesStayReadableAt390(t *testing.T) {
	e := &env{t: t, clock: &clock{now: time.Now().UTC()}}
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("cd", 32))
	// No AllowPrivateEgress: every attempt to the receiver on 127.0.0.1 fails with the guard's long message.
	e.serve(runtime.New(modelstest.Open(t), runtime.Options{Clock: e.clock, Log: quiet, Keys: keys,
		Notify: runtime.NotifyOptions{BaseURL: consoleURL}}))
	owner := e.owner().token()
	e.installTestFunction()
	_, draft := e.agentWithDraft(owner)
	if st, body := e.rawAPI(owner, "PUT", "/versions/"+draft.ID+"/config", fnAskConfig); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := e.api(owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	w := &world{env: e, owner: owner}
	recv := startReceiver(t)
	w.createHookAt(recv, strings.Replace(recv.srv.URL, "127.0.0.1", "localhost", 1)+hookPath, "internal", "json")
	var s session
	if st := e.api(owner, "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{}, "title": "t"}, &s); st != 201 {
		t.Fatalf("Session.create: %d", st)
	}
	e.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "fn__gh__get_repo", "input": map[string]any{}, "wait_seconds": 0}, nil)
	for range 3 {
		e.rt.DeliverNotifications(t.Context())
		e.clock.Advance(10 * time.Minute)
	}
	ctx := browserCtx(t)
	steps(t, ctx, "open Notifications on a phone",
		append(append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(390, 900)}, ownerSignIn(e.srv.URL)...),
			chromedp.Navigate(e.srv.URL+"/notifications"), chromedp.WaitVisible(css(`[data-testid=delivery-attempt]`)))...)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Attempts int     `json:"attempts"`
		Row      float64 `json:"row"`
		Column   float64 `json:"column"`
	}](`(() => { const r = document.querySelector("[data-testid=delivery-row]"), a = r.querySelector("[data-testid=delivery-attempts]");
	  return {attempts: a.children.length, row: r.getBoundingClientRect().height, column: a.closest("td").getBoundingClientRect().width}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts < 2 || !strings.Contains(text(t, ctx, `[data-testid=delivery-attempts]`), "egress") {
		t.Fatalf("want a delivery with several refused attempts, got %+v", got)
	}
	if got.Column < 280 || got.Row > 150*float64(got.Attempts) {
		t.Errorf("at 390 px the Attempts column is %.0f px wide and the row %.0f px tall for %d attempts", got.Column, got.Row, got.Attempts)
	}
}
