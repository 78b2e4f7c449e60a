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

// fnAskConfig asks first for a function tool: the call reaches no network
// before it is approved, so a server without --egress-allow-private works.
const fnAskConfig = `{"functions": [{"name": "gh", "package": "github", "version": "1.0.0",
  "origins": ["https://api.github.com"], "default_policy": "ask"}]}`

func TestWebhookToAPrivateAddressIsRefusedByTheEgressGuard(t *testing.T) {
	e := &env{t: t, clock: &clock{now: time.Now().UTC()}}
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("cd", 32))
	// No AllowPrivateEgress: the receiver on 127.0.0.1 is the server's own network.
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
	recv := startReceiver(t)
	w := &world{env: e, owner: owner}
	// A literal private address is refused when the channel is saved, naming the field and the flag.
	var p problem
	if st := w.api(owner, "POST", "/channels", map[string]any{"name": "internal", "kind": "webhook", "url": recv.srv.URL + hookPath}, &p); st != 422 ||
		p.Field != "url" || !strings.Contains(p.Detail, "127.0.0.1") || !strings.Contains(p.Detail, "--egress-allow-private") {
		t.Fatalf("a webhook to %s: %d %+v, want 422 naming url and the flag", recv.srv.URL, st, p)
	}
	// A name is judged at dial time, on the address it resolves to.
	hook := w.createHookAt(recv, strings.Replace(recv.srv.URL, "127.0.0.1", "localhost", 1)+hookPath, "internal", "json")
	var s session
	if st := e.api(owner, "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{}, "title": "t"}, &s); st != 201 {
		t.Fatalf("Session.create: %d", st)
	}
	var c call
	e.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "fn__gh__get_repo", "input": map[string]any{}, "wait_seconds": 0}, &c)
	if c.Status != "awaiting_approval" {
		t.Fatalf("the call is %q (%s), want awaiting_approval", c.Status, c.Reason)
	}
	e.rt.DeliverNotifications(t.Context())
	n := w.notification(hook.ID)
	if recv.count() != 0 || len(n.Tries) != 1 || n.Tries[0].OK || !strings.Contains(n.Tries[0].Error, "egress to 127.0.0.1 is refused") {
		t.Fatalf("the receiver saw %d requests; attempt %+v, want refused by the egress guard", recv.count(), n.Tries)
	}
	if strings.Contains(n.Tries[0].Error, hookPath) {
		t.Errorf("the recorded error shows the webhook's URL: %q", n.Tries[0].Error)
	}
}

func TestNotificationOutboxSurvivesARestart(t *testing.T) {
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("ef", 32))
	opts := runtime.Options{Keys: keys, Notify: runtime.NotifyOptions{BaseURL: consoleURL}}
	w := newWorldWith(t, askConfig, opts)
	recv := startReceiver(t)
	w.createHook(recv, "after restart", "json")
	sess := w.session(w.vault)
	<-w.callAsync(sess.Token, sess.ID, getEnv, map[string]any{}, 0)
	id := w.pending(w.owner, "", 1)[0].ID

	w.restart(opts) // nothing was delivered before the old server stopped
	w.rt.DeliverNotifications(t.Context())
	if recv.count() != 1 || !strings.Contains(string(recv.bodies[0]), id) {
		t.Fatalf("after the restart the receiver saw %d requests, want the approval %s once", recv.count(), id)
	}
}

func TestBrowserCreatesAWebhookChannel(t *testing.T) {
	e := newEnv(t)
	e.owner()
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in and open Notifications",
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Click(css(`[data-testid=nav-notifications]`)),
		chromedp.WaitVisible(css(`[data-testid=channel-form]`)),
	)
	if empty := text(t, ctx, `[data-testid=empty]`); !strings.Contains(empty, "No channels yet") {
		t.Fatalf("Notifications before any channel: %q", empty)
	}
	run("add a Slack webhook",
		chromedp.SendKeys(css(`[data-testid=channel-name]`), "on-call"),
		chromedp.SendKeys(css(`[data-testid=channel-url]`), "https://hooks.example.com"+hookPath),
		chromedp.SetValue(css(`[data-testid=channel-format]`), "slack"),
		chromedp.Click(css(`[data-testid=channel-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=channel-secret]`)),
	)
	screenshot(ctx, t, "notifications-secret")
	secret := text(t, ctx, `[data-testid=channel-secret]`)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the secret shown is %q", secret)
	}
	if row := text(t, ctx, `[data-testid=channel-row]`); !strings.Contains(row, "on-call") || !strings.Contains(row, "slack") ||
		!strings.Contains(row, "https://hooks.example.com/…") || strings.Contains(row, "url-path-is-a-secret") {
		t.Fatalf("the channel row reads %q", row)
	}
	run("reload", chromedp.Reload(), chromedp.WaitVisible(css(`[data-testid=channel-row]`)))
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(css(`html`)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, secret) || strings.Count(html, `data-testid="channel-row"`) != 1 {
		t.Fatalf("after a reload the secret shows again or the channel was made twice")
	}
}
