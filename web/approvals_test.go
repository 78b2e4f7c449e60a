package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
	"github.com/subako/subako/runtime/vault"
	"github.com/subako/subako/web"
)

// askConfig asks first in two ways: get-env by the grant's default policy,
// and echo of the "loud" grant by a tool rule.
const askConfig = `{"mcp_servers": [
  {"name": "everything", "url": "MCP_URL", "default_policy": "ask", "tool_rules": {"echo": "allow", "get-sum": "deny"}},
  {"name": "loud", "url": "MCP_URL", "default_policy": "allow", "tool_rules": {"echo": "ask"}}],
  "builtins": [{"name": "session"}]}`

const getEnv = "mcp__everything__get-env"

// newWorldWith is newWorld over a runtime built with opts, keeping opts so
// restart can build the next server over the same database and keys.
func newWorldWith(t *testing.T, config string, opts runtime.Options) *world {
	t.Helper()
	if opts.Keys == nil {
		opts.Keys, _ = vault.NewKeyringFromSecret(strings.Repeat("ab", 32))
	}
	e := &env{t: t, clock: &clock{now: time.Now().UTC()}}
	if opts.Clock == nil {
		opts.Clock = e.clock
	}
	opts.Log = quiet
	opts.AllowPrivateEgress = true // the MCP server listens on 127.0.0.1
	e.serve(runtime.New(modelstest.Open(t), opts))
	w := &world{env: e, owner: e.owner().token(), mcpURL: mcptest.StartEverything(t, mcpToken)}
	var v struct{ ID string }
	if s := e.api(w.owner, "POST", "/vaults", map[string]any{"name": "customer-a"}, &v); s != 201 {
		t.Fatalf("Vault.create: %d", s)
	}
	w.vault = v.ID
	if s := e.api(w.owner, "PUT", "/vaults/"+v.ID+"/credentials", map[string]any{"prefix": w.mcpURL, "type": "bearer", "secret": mcpToken}, nil); s != 200 {
		t.Fatalf("Credential.set: %d", s)
	}
	agent, draft := e.agentWithDraft(w.owner)
	w.agent = agent
	if s, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", strings.ReplaceAll(config, "MCP_URL", w.mcpURL)); s != 200 {
		t.Fatalf("Version.update: %d %s", s, body)
	}
	if s := e.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); s != 200 {
		t.Fatalf("publish: %d", s)
	}
	w.version = draft.ID
	return w
}

// serve puts a runtime behind a fresh HTTP server, as `subako serve` does.
func (e *env) serve(rt *runtime.Runtime) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: e.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	e.rt = rt
	e.t.Cleanup(e.srv.Close)
	e.t.Cleanup(rt.Close)
}

// restart stops the server and its runtime and starts new ones over the same
// database and keys, as a process restart would.
func (w *world) restart(opts runtime.Options) {
	w.t.Helper()
	db := w.rt.DB()
	w.srv.Close()
	w.rt.Close()
	opts.Log = quiet
	opts.AllowPrivateEgress = true
	rt := runtime.New(db, opts)
	w.serve(rt)
	rt.Start(w.t.Context(), 50*time.Millisecond)
}

func (w *world) titledSession(title string) session {
	w.t.Helper()
	var s session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "vaults": []string{w.vault}, "title": title}, &s); st != 201 {
		w.t.Fatalf("Session.create: %d", st)
	}
	return s
}

// callAsync makes a call that waits for its answer in the background, the
// way an agent waits on an ask-first tool.
func (w *world) callAsync(token, sessionID, tool string, input any, wait float64) <-chan call {
	out := make(chan call, 1)
	go func() {
		var c call
		w.api(token, "POST", "/sessions/"+sessionID+"/tool_calls", map[string]any{"tool": tool, "input": input, "model": "test-model", "wait_seconds": wait}, &c)
		out <- c
	}()
	return out
}

type queued struct {
	ID            string          `json:"id"`
	Call          string          `json:"call"`
	State         string          `json:"state"`
	Reason        string          `json:"reason"`
	DecidedBy     string          `json:"decided_by"`
	Tool          string          `json:"tool"`
	Grant         string          `json:"grant"`
	PolicySource  string          `json:"policy_source"`
	AgentName     string          `json:"agent_name"`
	VersionNumber int             `json:"version_number"`
	SessionTitle  string          `json:"session_title"`
	Model         string          `json:"model"`
	By            string          `json:"by"`
	Input         json.RawMessage `json:"input"`
	WaitedMS      int64           `json:"waited_ms"`
	Session       string          `json:"session"`
	Scope         string          `json:"scope"`
	DecidedAt     *time.Time      `json:"decided_at"`
}

// pending waits until n approvals match the query, and returns them.
func (w *world) pending(token, query string, n int) []queued {
	w.t.Helper()
	for range 200 {
		var qs []queued
		if st := w.api(token, "GET", "/approvals?"+query, nil, &qs); st != 200 {
			w.t.Fatalf("Approval.list?%s: %d", query, st)
		}
		if len(qs) == n {
			return qs
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.t.Fatalf("Approval.list?%s never had %d items", query, n)
	return nil
}

var flashText = regexp.MustCompile(`data-testid="flash">([^<]*)<`)

// decide posts a console decision and returns the flash the person sees next.
func decideInConsole(b *client, id, verb string, form url.Values) string {
	b.e.t.Helper()
	form.Set("back", "/approvals")
	resp, _ := b.post("/approvals/"+id+"/"+verb, form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/approvals" {
		b.e.t.Fatalf("%s %s answered %d to %q", verb, id, resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := b.get("/approvals")
	m := flashText.FindAllStringSubmatch(page, -1)
	if m == nil {
		b.e.t.Fatalf("no flash after %s", verb)
	}
	return m[len(m)-1][1] // the newest: an earlier one may still be queued (a welcome)
}

func countTestID(page, testid string) int { return strings.Count(page, `data-testid="`+testid+`"`) }

func TestApprovalQueueShowsWhatAnApproverNeeds(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	refunds, other := w.titledSession("Refunds for ACME"), w.titledSession("Nightly report")
	if st, _ := w.call(refunds.Token, refunds.ID, getEnv, map[string]any{}, 0); st != 202 {
		t.Fatalf("get-env: %d", st)
	}
	w.clock.Advance(3 * time.Minute)
	// Sent by hand so the markup in it reaches the record as typed, not as \u003c.
	long := strings.Repeat("refund order 17 <b>now</b> ", 120)
	body := `{"tool": "mcp__loud__echo", "model": "test-model", "wait_seconds": 0, "input": {"message": "` + long + `"}}`
	if st, b := w.rawAPI(other.Token, "POST", "/sessions/"+other.ID+"/tool_calls", body); st != 202 {
		t.Fatalf("echo: %d %s", st, b)
	}
	w.clock.Advance(time.Minute)
	owner := w.browserOf()
	_, page := owner.get("/approvals")
	if countTestID(page, "approval-item") != 2 || countTestID(page, "approval-approve") != 2 || countTestID(page, "approval-approve-session") != 2 {
		t.Fatalf("the owner's queue:\n%s", page)
	}
	for _, want := range []string{"<title>(2) Approvals · Subako</title>", `<span class="nav-count">2</span>`,
		"asks by the grant", "default policy", "asks by a tool rule", ">support<", "version 1", "Refunds for ACME",
		"Nightly report", "test-model", "session Refunds for ACME", "4m 0s", "1m 0s", `class="j-key"`, `class="j-str"`,
		`data-testid="approval-show-all"`, "Show all (3 lines)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the queue does not show %q", want)
		}
	}
	if strings.Contains(page, "<b>now") || !strings.Contains(page, "&lt;b&gt;now") {
		t.Error("the input's markup is not shown as text")
	}
	first := func(p string) bool {
		return strings.Index(p, ">"+getEnv+"</code>") < strings.Index(p, ">mcp__loud__echo</code>")
	}
	if !first(page) {
		t.Error("the queue is not oldest first")
	}
	if _, p := owner.get("/approvals?order=newest"); first(p) {
		t.Error("newest first does not put the newest first")
	}

	filters := []struct {
		query string
		want  []string
	}{
		{"grant=loud", []string{"mcp__loud__echo"}},
		{"tool=" + getEnv, []string{getEnv}},
		{"session=" + other.ID, []string{"mcp__loud__echo"}},
		{"agent=" + w.agent, []string{getEnv, "mcp__loud__echo"}},
		{"agent=support", []string{getEnv, "mcp__loud__echo"}},
		{"agent=nobody", nil},
	}
	for _, f := range filters {
		_, p := owner.get("/approvals?" + f.query)
		if got := countTestID(p, "approval-tool"); got != len(f.want) {
			t.Errorf("?%s shows %d items, want %d", f.query, got, len(f.want))
		}
		for _, tool := range f.want {
			if !strings.Contains(p, ">"+tool+"</code>") {
				t.Errorf("?%s does not show %s", f.query, tool)
			}
		}
		if len(f.want) == 0 && !strings.Contains(p, "Nothing waiting matches these filters") {
			t.Errorf("?%s: an empty filtered queue does not say so", f.query)
		}
	}

	viewer := w.person(owner, "viewer@example.com", "viewer")
	_, vp := viewer.get("/approvals")
	if countTestID(vp, "approval-item") != 2 || countTestID(vp, "approval-approve") != 0 || countTestID(vp, "approval-deny") != 0 || countTestID(vp, "approval-read-only") != 2 {
		t.Fatalf("a viewer's queue is not read-only:\n%s", vp)
	}
}

func TestApprovalListFiltersOnTheAPI(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	s := w.titledSession("Refunds for ACME")
	w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
	w.clock.Advance(time.Second)
	w.call(s.Token, s.ID, "mcp__loud__echo", map[string]any{"message": "hello"}, 0)
	got := w.pending(w.owner, "grant=loud", 1)[0]
	if got.Tool != "mcp__loud__echo" || got.PolicySource != "rule" || got.AgentName != "support" || got.VersionNumber != 1 ||
		got.SessionTitle != "Refunds for ACME" || got.Model != "test-model" || got.By != "session Refunds for ACME" ||
		got.State != "pending" || !strings.Contains(string(got.Input), `"hello"`) {
		t.Fatalf("Approval.list?grant=loud: %+v", got)
	}
	if all := w.pending(w.owner, "", 2); all[0].Tool != getEnv || all[0].PolicySource != "default" {
		t.Fatalf("Approval.list is not oldest first: %+v", all)
	}
	if n := len(w.pending(w.owner, "q=nothing-matches", 0)); n != 0 {
		t.Fatalf("search found %d", n)
	}
	bad := []struct{ query, field string }{
		{"state=bogus", "state"}, {"order=sideways", "order"}, {"limit=many", "limit"}, {"limit=501", "limit"},
		{"q=" + strings.Repeat("x", 201), "q"},
	}
	for _, b := range bad {
		var p problem
		if st := w.api(w.owner, "GET", "/approvals?"+b.query, nil, &p); st != 422 || p.Field != b.field {
			t.Errorf("?%s: %d %+v", b.query, st, p)
		}
	}
}

func TestApprovalDecisionsInTheConsole(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	owner := w.browserOf()
	approver := w.person(owner, "approver@example.com", "member")
	second := w.person(owner, "second@example.com", "member")

	// Approve: the waiting agent gets the tool's output.
	waiting := w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 20)
	ap := w.pending(w.owner, "", 1)[0]
	if msg := decideInConsole(approver, ap.ID, "approve", url.Values{"scope": {"call"}}); !strings.Contains(msg, "Approved") {
		t.Fatalf("approve: flash %q", msg)
	}
	if c := <-waiting; c.Status != "succeeded" || !strings.Contains(string(c.Output), "GZIP_ALLOWED_DOMAINS") {
		t.Fatalf("the approved call: %+v %s", c, c.Output)
	}

	// Deny with a reason: the waiting agent gets the reason.
	waiting = w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 20)
	ap = w.pending(w.owner, "", 1)[0]
	decideInConsole(approver, ap.ID, "deny", url.Values{"reason": {"not during the freeze"}, "scope": {"call"}})
	if c := <-waiting; c.Status != "refused" || !strings.Contains(c.Reason, "denied by approver@example.com: not during the freeze") {
		t.Fatalf("the denied call: %+v", c)
	}

	// Whoever made a call cannot decide it.
	w.call(w.owner, s.ID, getEnv, map[string]any{}, 0)
	own := w.pending(w.owner, "", 1)[0]
	if msg := decideInConsole(owner, own.ID, "approve", url.Values{}); !strings.Contains(msg, "You made this call yourself") {
		t.Fatalf("deciding one's own call: flash %q", msg)
	}
	w.pending(w.owner, "", 1)

	// Two approvers at once: one verdict wins, the other is told who decided and how.
	var wg sync.WaitGroup
	msgs := make([]string, 2)
	for i, p := range []struct {
		b    *client
		verb string
	}{{approver, "approve"}, {second, "deny"}} {
		wg.Go(func() { msgs[i] = decideInConsole(p.b, own.ID, p.verb, url.Values{"reason": {"race"}}) })
	}
	wg.Wait()
	approved, denied := strings.HasPrefix(msgs[0], "Approved"), strings.HasPrefix(msgs[1], "Denied")
	loser := msgs[0]
	if approved {
		loser = msgs[1]
	}
	lost := regexp.MustCompile(`^Already (approved by approver|denied by second)@example.com at [A-Z][a-z]{2} \d+, \d{4} \d\d:\d\d:\d\d UTC\.$`)
	if approved == denied || !lost.MatchString(loser) {
		t.Fatalf("concurrent decisions: %q", msgs)
	}

	// Every decision, and the refused one, is an Action on the audit log.
	for _, c := range []struct{ verb, verdict, by string }{
		{"Approval.approve", "allowed", "approver@example.com"},
		{"Approval.deny", "allowed", "approver@example.com"},
		{"Approval.approve", "refused", "owner@example.com"},
	} {
		var acts []struct {
			Targets []string
			Reason  string
		}
		w.api(w.owner, "GET", "/actions?verb="+c.verb+"&verdict="+c.verdict+"&by="+c.by, nil, &acts)
		if len(acts) == 0 || len(acts[0].Targets) == 0 || !strings.HasPrefix(acts[0].Targets[0], "apr_") {
			t.Errorf("no %s %s Action by %s with the approval as target: %+v", c.verdict, c.verb, c.by, acts)
		}
	}
}

func TestApprovalHistoryIsSearchable(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	approver := w.person(w.browserOf(), "approver@example.com", "member")
	for _, d := range []struct{ verb, reason string }{{"approve", "looks fine"}, {"deny", "not during the freeze"}} {
		w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
		ap := w.pending(w.owner, "", 1)[0]
		decideInConsole(approver, ap.ID, d.verb, url.Values{"reason": {d.reason}})
	}
	_, page := approver.get("/approvals/history")
	if countTestID(page, "history-row") != 2 || !strings.Contains(page, "looks fine") || !strings.Contains(page, "not during the freeze") ||
		strings.Count(page, `data-testid="history-by">approver@example.com<`) != 2 {
		t.Fatalf("history:\n%s", page)
	}
	for query, want := range map[string]string{"q=FREEZE": "not during the freeze", "state=approved": "looks fine", "q=approver%40example": ""} {
		_, p := approver.get("/approvals/history?" + query)
		n := 1
		if want == "" {
			n = 2
		}
		if countTestID(p, "history-row") != n || !strings.Contains(p, want) {
			t.Errorf("history?%s shows %d rows", query, countTestID(p, "history-row"))
		}
	}
}

func TestApproveAndAllowForTheSession(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s, other := w.session(w.vault), w.session(w.vault)
	approver := w.person(w.browserOf(), "approver@example.com", "member")
	w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
	ap := w.pending(w.owner, "", 1)[0]
	if msg := decideInConsole(approver, ap.ID, "approve", url.Values{"scope": {"session"}}); !strings.Contains(msg, "rest of this session") {
		t.Fatalf("approve for the session: flash %q", msg)
	}
	// The same tool in the same session now runs without asking.
	if st, c := w.call(s.Token, s.ID, getEnv, map[string]any{}, 10); st != 200 || c.Status != "succeeded" || c.Approval != nil {
		t.Fatalf("the next call in the session: %d %+v", st, c)
	}
	// In another session it still asks.
	if st, c := w.call(other.Token, other.ID, getEnv, map[string]any{}, 0); st != 202 || c.Status != "awaiting_approval" {
		t.Fatalf("the same tool in another session: %d %+v", st, c)
	}
	if _, page := approver.get("/approvals/history"); !strings.Contains(page, "approved for the session") {
		t.Fatal("the history does not say the approval covered the session")
	}
}

func TestApprovalExpiresAfterTheTimeout(t *testing.T) {
	// As `subako serve --approval-timeout 1s`: the real clock and the reaper.
	w := newWorldWith(t, everythingConfig, runtime.Options{Clock: runtime.SystemClock, ApprovalTimeout: time.Second})
	w.rt.Start(t.Context(), 50*time.Millisecond)
	s := w.session(w.vault)
	start := time.Now()
	st, c := w.call(s.Token, s.ID, getEnv, map[string]any{}, 20)
	if st != 200 || c.Status != "refused" || c.Reason != "approval expired" {
		t.Fatalf("a call nobody decided: %d %+v", st, c)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("refused after %v, before the timeout", waited)
	}
	exp := w.pending(w.owner, "state=expired", 1)[0]
	if exp.Reason != "approval expired" || exp.DecidedAt == nil {
		t.Fatalf("the expired approval: %+v", exp)
	}
	_, page := w.browserOf().get("/approvals/history?state=expired")
	if countTestID(page, "history-row") != 1 || !strings.Contains(page, "approval expired") || strings.Contains(page, "nav-count") {
		t.Fatalf("history of expired approvals:\n%s", page)
	}
}

func TestPendingApprovalSurvivesARestart(t *testing.T) {
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("cd", 32))
	w := newWorldWith(t, everythingConfig, runtime.Options{Keys: keys})
	s := w.session(w.vault)
	st, c := w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
	if st != 202 {
		t.Fatalf("ask-first call: %d", st)
	}
	w.restart(runtime.Options{Keys: keys})
	ap := w.pending(w.owner, "", 1)[0]
	if ap.Call != c.ID {
		t.Fatalf("after the restart the queue holds %+v", ap)
	}
	if st := w.api(w.owner, "POST", "/approvals/"+ap.ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve after the restart: %d", st)
	}
	got := w.waitFinal(s.Token, c.ID)
	if got.Status != "succeeded" || !strings.Contains(string(got.Output), "GZIP_ALLOWED_DOMAINS") {
		t.Fatalf("ToolCall.get after the restart: %+v", got)
	}
}

// A multi-line string in an input (a script, a command) is shown as the lines
// it is, beside the JSON where it is one line full of \n.
func TestApprovalShowsMultilineInputAsText(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	s := w.titledSession("Scripts")
	script := "set -e\ncd /workspace\nrm -rf build\n"
	if st, _ := w.call(s.Token, s.ID, "mcp__loud__echo", map[string]any{"message": script}, 0); st != 202 {
		t.Fatalf("echo: %d", st)
	}
	_, page := w.browserOf().get("/approvals")
	want := `data-testid="approval-text-message">set -e
cd /workspace
rm -rf build
</pre>`
	if !strings.Contains(page, want) || !strings.Contains(page, "(3 lines)") {
		t.Fatalf("the script is not shown as its lines:\n%s", page)
	}
}
