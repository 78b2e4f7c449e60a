package web_test

// Progress and cancellation on a session's MCP endpoint, with the official
// TypeScript SDK client (web/testdata/mcp_progress_client.mjs) and the JSON API.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// progressConfig asks first for every tool of server-everything but echo and
// the long-running operation.
const progressConfig = `{"mcp_servers": [{"name": "everything", "url": "MCP_URL", "default_policy": "ask",
  "tool_rules": {"echo": "allow", "trigger-long-running-operation": "allow"}}]}`

// progressLine is one line the TypeScript client script printed.
type progressLine struct {
	Type     string          `json:"type"`
	At       int64           `json:"at"`
	Progress float64         `json:"progress"`
	Total    *float64        `json:"total"`
	Message  *string         `json:"message"`
	Result   json.RawMessage `json:"result"`
	Error    *struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (l progressLine) message() string {
	if l.Message == nil {
		return ""
	}
	return *l.Message
}

// tsProgressClient runs the TypeScript client against an MCP endpoint:
// mode call or cancel, the tool and its arguments.
func tsProgressClient(t *testing.T, endpoint, token, mode, tool string, args any) <-chan progressLine {
	t.Helper()
	raw, _ := json.Marshal(args)
	return tsClientLines[progressLine](t, "testdata/mcp_progress_client.mjs", endpoint, token, mode, tool, string(raw))
}

// until reads lines until one of type want, returning it and those before it.
func until(t *testing.T, lines <-chan progressLine, want string, within time.Duration) (progressLine, []progressLine) {
	t.Helper()
	var seen []progressLine
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the client ended before %q; it said %+v", want, seen)
			}
			if l.Type == want {
				return l, seen
			}
			seen = append(seen, l)
		case <-deadline:
			t.Fatalf("no %q from the client within %s; it said %+v", want, within, seen)
		}
	}
}

// The TypeScript SDK client with resetTimeoutOnProgress and no tasks: an
// ask-first call approved after more than its 60 s request timeout still
// returns the tool's result, because the endpoint reports "waiting for an
// approver" at least every 10 s.
func TestMCPProgressOutlastsTheTSClientTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, progressConfig)
	s := w.session(w.vault)
	lines := tsProgressClient(t, w.srv.URL+"/mcp/sessions/"+s.ID, s.Token, "call", getEnv, map[string]any{})
	until(t, lines, "connected", 30*time.Second)
	first, _ := until(t, lines, "progress", 30*time.Second)
	if first.message() != "waiting for an approver" {
		t.Fatalf("the first progress says %q", first.message())
	}
	ap := w.pending(w.owner, "session="+s.ID, 1)[0]

	time.Sleep(65 * time.Second) // past the client's 60 s timeout
	if st := w.api(w.owner, "POST", "/approvals/"+ap.ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve after 65 s: %d", st)
	}
	res, seen := until(t, lines, "result", 30*time.Second)
	if res.At < 60000 {
		t.Fatalf("the result came after %d ms, before the client's timeout could have fired", res.At)
	}
	var result struct {
		IsError bool `json:"isError"`
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(res.Result, &result); err != nil || result.IsError || len(result.Content) == 0 ||
		!strings.Contains(result.Content[0].Text, "GZIP_ALLOWED_DOMAINS") {
		t.Fatalf("the approved call's result: %s", res.Result)
	}
	prev := first
	waiting := 1
	for _, l := range seen {
		if l.Type != "progress" {
			t.Fatalf("the client said %+v before the result", l)
		}
		if gap := l.At - prev.At; gap > 10000 {
			t.Fatalf("%d ms between progress notifications (%+v after %+v); at most 10 s", gap, l, prev)
		}
		if l.message() == "waiting for an approver" {
			waiting++
		}
		prev = l
	}
	if waiting < 12 {
		t.Fatalf("only %d notifications said waiting for an approver in 65 s", waiting)
	}
	if gap := res.At - prev.At; gap > 10000 {
		t.Fatalf("%d ms between the last progress and the result", gap)
	}
}

// server-everything's long-running operation reports the same progress
// through Subako as directly: every notification the server sends arrives,
// with its progress, total and message; Subako's own ("running") come beside
// them.
func TestMCPLongRunningProgressSameAsDirect(t *testing.T) {
	w := newWorld(t, progressConfig)
	s := w.session(w.vault)
	args := map[string]any{"duration": 3, "steps": 6}
	collect := func(endpoint, token, tool string) (server, own []string) {
		lines := tsProgressClient(t, endpoint, token, "call", tool, args)
		res, seen := until(t, lines, "result", 60*time.Second)
		if !strings.Contains(string(res.Result), "Long running operation completed") {
			t.Fatalf("%s: %s", endpoint, res.Result)
		}
		for _, l := range seen {
			if l.Type != "progress" {
				continue
			}
			total := "none"
			if l.Total != nil {
				total = fmt.Sprint(*l.Total)
			}
			p := fmt.Sprintf("%v/%s %q", l.Progress, total, l.message())
			if l.message() == "running" {
				own = append(own, p)
			} else {
				server = append(server, p)
			}
		}
		return server, own
	}
	direct, _ := collect(w.mcpURL, mcpToken, "trigger-long-running-operation")
	through, own := collect(w.srv.URL+"/mcp/sessions/"+s.ID, s.Token, "mcp__everything__trigger-long-running-operation")
	if len(direct) != 6 || strings.Join(direct, ", ") != strings.Join(through, ", ") {
		t.Fatalf("progress directly: %v\nthrough Subako: %v", direct, through)
	}
	if len(own) == 0 {
		t.Fatalf("Subako said nothing of its own: %v", through)
	}
}

// A client that cancels its request (notifications/cancelled) ends its call:
// the approval leaves an approver's open page live, approving it answers 409
// and can never run the tool, the history says "cancelled by the caller",
// and the cancellation is an Action.
func TestBrowserMCPCancelledCallLeavesTheQueue(t *testing.T) {
	w := newWorld(t, progressConfig)
	s := w.session(w.vault)
	w.person(w.browserOf(), "approver@example.com", "member")
	ctx := browserCtx(t)
	signIn(t, ctx, w, "approver@example.com")
	steps(t, ctx, "open the queue",
		chromedp.Navigate(w.srv.URL+"/approvals"),
		chromedp.WaitVisible(css(`[data-testid=approval-queue] [data-testid=empty]`)),
		void(chromedp.Evaluate[bool](`window.notReloaded = true`)),
	)

	// The session's page, in a second tab, shows its pending approvals too.
	sessionTab, closeTab := chromedp.NewContext(ctx)
	defer closeTab()
	const sessionPending = `document.querySelectorAll("[data-testid=pending-approval]").length`
	steps(t, sessionTab, "open the session's page",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(css(`body`)),
		void(chromedp.Evaluate[bool](`window.notReloaded = true`)),
	)

	lines := tsProgressClient(t, w.srv.URL+"/mcp/sessions/"+s.ID, s.Token, "cancel", getEnv, map[string]any{})
	steps(t, ctx, "the call appears live", watchDOM(queueItems+` === 1`, 20*time.Second))
	steps(t, sessionTab, "and on the session's page", watchDOM(sessionPending+` === 1`, 20*time.Second))
	ap := w.pending(w.owner, "session="+s.ID, 1)[0]
	_, seen := until(t, lines, "cancelled", 30*time.Second)
	if len(seen) < 3 || seen[1].Type != "progress" || seen[2].Type != "error" {
		t.Fatalf("the client said %+v", seen)
	}
	steps(t, ctx, "the cancelled call leaves the page without a reload",
		watchDOM(queueItems+` === 0 && window.notReloaded === true`, 10*time.Second))
	steps(t, sessionTab, "and the session's page",
		watchDOM(sessionPending+` === 0 && window.notReloaded === true`, 10*time.Second))

	st, body := w.rawAPI(w.owner, "POST", "/approvals/"+ap.ID+"/approve", "{}")
	if st != 409 || !strings.Contains(string(body), "call_cancelled") {
		t.Fatalf("approving a cancelled call: %d %s", st, body)
	}
	var c call
	w.api(w.owner, "GET", "/tool_calls/"+ap.Call, nil, &c)
	if c.Status != "refused" || !strings.HasPrefix(c.Reason, "cancelled by the caller") || hasOutput(c.Output) {
		t.Fatalf("the cancelled call: %+v", c)
	}
	hist := w.pending(w.owner, "state=cancelled&session="+s.ID, 1)
	if hist[0].State != "cancelled" || !strings.HasPrefix(hist[0].Reason, "cancelled by the caller") {
		t.Fatalf("the history: %+v", hist[0])
	}
	if a, ok := w.actionFor("verb=ToolCall.cancel", ap.Call); !ok || a.Verdict != "allowed" {
		t.Fatalf("no ToolCall.cancel Action: %+v", a)
	}
	steps(t, ctx, "the history shows it",
		chromedp.Navigate(w.srv.URL+"/approvals/history?state=cancelled"),
		watchDOM(`[...document.querySelectorAll("[data-testid=history-reason]")].some(e => e.textContent.startsWith("cancelled by the caller"))`, 10*time.Second))
	// Nothing runs it later.
	time.Sleep(500 * time.Millisecond)
	w.api(w.owner, "GET", "/tool_calls/"+ap.Call, nil, &c)
	if c.Status != "refused" {
		t.Fatalf("the cancelled call became %s", c.Status)
	}
}

// ToolCall.cancel on the JSON API: only the caller or someone who may end the
// session; a wait_seconds that runs out is not a cancellation; a running call
// is stopped; a finished one answers 409.
func TestToolCallCancelAPI(t *testing.T) {
	w := newWorld(t, progressConfig)
	s := w.session(w.vault)
	other := w.session(w.vault)
	viewer := w.person(w.browserOf(), "viewer@example.com", "viewer").token()

	st, c := w.call(s.Token, s.ID, getEnv, map[string]any{}, 0.2)
	if st != 202 || c.Status != "awaiting_approval" {
		t.Fatalf("ask-first call: %d %+v", st, c)
	}
	// The wait ran out: nothing was cancelled.
	time.Sleep(300 * time.Millisecond)
	var got call
	w.api(s.Token, "GET", "/tool_calls/"+c.ID, nil, &got)
	if got.Status != "awaiting_approval" || got.Approval == nil || got.Approval.State != "pending" {
		t.Fatalf("after wait_seconds ran out: %+v", got)
	}
	if st, body := w.rawAPI(other.Token, "POST", "/tool_calls/"+c.ID+"/cancel", "{}"); st != 404 {
		t.Fatalf("another session cancelled: %d %s", st, body)
	}
	if st, body := w.rawAPI(viewer, "POST", "/tool_calls/"+c.ID+"/cancel", "{}"); st != 403 {
		t.Fatalf("a viewer cancelled: %d %s", st, body)
	}
	if st, body := w.rawAPI(s.Token, "POST", "/tool_calls/"+c.ID+"/cancel", `{"reason": "`+strings.Repeat("x", 501)+`"}`); st != 422 || !strings.Contains(string(body), "500") {
		t.Fatalf("a 501-character reason: %d %s", st, body)
	}
	st, body := w.rawAPI(s.Token, "POST", "/tool_calls/"+c.ID+"/cancel", `{"reason": "not needed any more"}`)
	if err := json.Unmarshal(body, &got); st != 200 || err != nil || got.Status != "refused" ||
		got.Reason != "cancelled by the caller: not needed any more" || got.Approval == nil || got.Approval.State != "cancelled" {
		t.Fatalf("cancel: %d %s", st, body)
	}
	if st, body := w.rawAPI(s.Token, "POST", "/tool_calls/"+c.ID+"/cancel", "{}"); st != 409 || !strings.Contains(string(body), "call_finished") {
		t.Fatalf("cancel again: %d %s", st, body)
	}
	w.pending(w.owner, "session="+s.ID, 0)
	ap := w.pending(w.owner, "state=cancelled&session="+s.ID, 1)[0]
	if st, body := w.rawAPI(w.owner, "POST", "/approvals/"+ap.ID+"/approve", "{}"); st != 409 || !strings.Contains(string(body), "call_cancelled") {
		t.Fatalf("approve a cancelled call: %d %s", st, body)
	}

	// A person who may end the session cancels a running call: it stops.
	st, c = w.call(s.Token, s.ID, "mcp__everything__trigger-long-running-operation", map[string]any{"duration": 30, "steps": 2}, 0.5)
	if st != 202 || c.Status != "running" {
		t.Fatalf("long-running call: %d %+v", st, c)
	}
	st, body = w.rawAPI(w.owner, "POST", "/tool_calls/"+c.ID+"/cancel", "{}")
	if err := json.Unmarshal(body, &got); st != 200 || err != nil || got.Status != "failed" || got.Error != "cancelled by the caller" {
		t.Fatalf("cancel a running call: %d %s", st, body)
	}
	time.Sleep(time.Second)
	w.api(s.Token, "GET", "/tool_calls/"+c.ID, nil, &got)
	if got.Status != "failed" || hasOutput(got.Output) {
		t.Fatalf("the stopped call later: %+v", got)
	}
	if a, ok := w.actionFor("verb=ToolCall.cancel", c.ID); !ok || a.Verdict != "allowed" {
		t.Fatalf("no ToolCall.cancel Action: %+v", a)
	}
}

func hasOutput(o json.RawMessage) bool { return len(o) > 0 && string(o) != "null" }

// A client that goes away (its HTTP request closes, no notifications/cancelled)
// ends its call too, on an older protocol revision where the SDK keeps the
// handler running after the request closed.
func TestMCPClosedRequestCancelsTheCall(t *testing.T) {
	w := newWorld(t, progressConfig)
	s := w.session(w.vault)
	endpoint := w.srv.URL + "/mcp/sessions/" + s.ID
	post := func(ctx context.Context, sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", body, err)
		}
		return resp
	}
	resp := post(t.Context(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if sid == "" {
		t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	resp = post(t.Context(), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()

	ctx, hangUp := context.WithCancel(t.Context())
	resp = post(ctx, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+getEnv+`","arguments":{},"_meta":{"progressToken":"p1"}}}`)
	line, err := bufio.NewReader(resp.Body).ReadString('}')
	if err != nil || !strings.Contains(line, `"notifications/progress"`) || !strings.Contains(line, `"p1"`) {
		t.Fatalf("the first event: %q %v", line, err)
	}
	ap := w.pending(w.owner, "session="+s.ID, 1)[0]
	hangUp()
	resp.Body.Close()
	w.pending(w.owner, "session="+s.ID, 0)
	var c call
	w.api(w.owner, "GET", "/tool_calls/"+ap.Call, nil, &c)
	if c.Status != "refused" || !strings.HasPrefix(c.Reason, "cancelled by the caller") || c.Approval == nil || c.Approval.State != "cancelled" {
		t.Fatalf("the call of a client that went away: %+v", c)
	}
}
