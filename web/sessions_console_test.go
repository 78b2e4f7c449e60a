package web_test

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
	"github.com/subako/subako/web"
)

var sessionTokenRe = regexp.MustCompile(`sbs_[a-z0-9]+`)

// consoleSession starts a session from the New session form and returns its
// id and the page that answered.
func (w *world) consoleSession(b *client, title string, vaults ...string) (string, string) {
	w.t.Helper()
	resp, page := b.submit("/sessions", url.Values{"version": {w.version}, "vaults": vaults, "title": {title}})
	m := regexp.MustCompile(`/sessions/(ses_[a-z0-9]+)/events`).FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		w.t.Fatalf("New session answered %d:\n%s", resp.StatusCode, page)
	}
	return m[1], page
}

func TestSessionCreateShowsTokenOnce(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	list := mustGet(owner, "/sessions")
	if !strings.Contains(list, "· version 1</option>") || !strings.Contains(list, ">1. customer-a</option>") {
		t.Fatalf("the New session form does not offer the published version and the vault:\n%s", list)
	}
	id, page := w.consoleSession(owner, "Refund for order 17", "", w.vault)
	token := sessionTokenRe.FindString(page)
	if token == "" || !strings.Contains(page, w.srv.URL+"/mcp/sessions/"+id) || !strings.Contains(page, "curl -H &#39;Authorization: Bearer "+token) {
		t.Fatalf("the new session's page lacks its token, endpoint or curl example:\n%s", page)
	}
	// The token shown works, on this session only.
	var got struct{ Title string }
	if st := w.api(token, "GET", "/sessions/"+id, nil, &got); st != 200 || got.Title != "Refund for order 17" {
		t.Fatalf("the shown token: %d %+v", st, got)
	}
	// Never again: not on a reload, not in the list.
	for _, path := range []string{"/sessions/" + id, "/sessions"} {
		if body := mustGet(owner, path); strings.Contains(body, token) || sessionTokenRe.MatchString(body) {
			t.Fatalf("%s shows a session token again", path)
		}
	}
	list = mustGet(owner, "/sessions")
	for _, want := range []string{"Refund for order 17", "Version 1", "customer-a", "active"} {
		if !strings.Contains(list, want) {
			t.Errorf("the sessions list lacks %q", want)
		}
	}
	session := mustGet(owner, "/sessions/"+id)
	for _, want := range []string{`href="/versions/` + w.version + `"`, "mcp__everything__echo", "builtin__session__rename", `href="/vaults/` + w.vault + `"`} {
		if !strings.Contains(session, want) {
			t.Errorf("the session page lacks %q", want)
		}
	}
	if strings.Contains(session, "mcp__everything__get-sum") {
		t.Error("the session page offers a denied tool")
	}
}

func TestSessionCreateErrorsUnderFields(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	cases := []struct {
		name       string
		form       url.Values
		status     int
		field, msg string
	}{
		{"no version", url.Values{"version": {"ver_nope"}}, 422, "session-version-error", "no such version"},
		{"title too long", url.Values{"version": {w.version}, "title": {strings.Repeat("t", 201)}}, 422, "session-title-error", "at most 200 characters"},
		{"unknown vault", url.Values{"version": {w.version}, "vaults": {"nope"}}, 422, "session-vaults-error", `no vault &#34;nope&#34;`},
		{"vault twice", url.Values{"version": {w.version}, "vaults": {w.vault, w.vault}}, 422, "session-vaults-error", "listed twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, page := owner.post("/sessions", c.form)
			if resp.StatusCode != c.status || !strings.Contains(fieldText(page, c.field), c.msg) {
				t.Fatalf("%d, %s says %q", resp.StatusCode, c.field, fieldText(page, c.field))
			}
			if sessionTokenRe.MatchString(page) {
				t.Fatal("a refused session shows a token")
			}
		})
	}
	var list []session
	if w.api(w.owner, "GET", "/sessions", nil, &list); len(list) != 0 {
		t.Fatalf("refused forms left %d sessions behind", len(list))
	}
}

func TestTryToolRecordsTheOperator(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	id, _ := w.consoleSession(owner, "try", w.vault)
	htmx := map[string]string{"HX-Request": "true"}
	resp, frag := owner.do("POST", "/sessions/"+id+"/try", url.Values{"tool": {"mcp__everything__echo"},
		"input": {`{"message": "hello from the console"}`}}, htmx)
	if resp.StatusCode != 200 || !strings.Contains(frag, "Echo: hello from the console") || !strings.Contains(frag, "succeeded") {
		t.Fatalf("Try a tool answered %d:\n%s", resp.StatusCode, frag)
	}
	var calls []struct{ Tool, By, Status string }
	w.api(w.owner, "GET", "/sessions/"+id+"/tool_calls", nil, &calls)
	if len(calls) != 1 || calls[0].By != "owner@example.com" || calls[0].Tool != "mcp__everything__echo" {
		t.Fatalf("the call is not recorded as the operator's: %+v", calls)
	}
	if page := mustGet(owner, "/sessions/"+id); !strings.Contains(page, "hello from the console") || !strings.Contains(page, `data-testid="call-by">owner@example.com`) {
		t.Fatal("the call log does not show the call by the operator")
	}

	// Bad JSON: the message is under the input, the text typed stays, no call is made.
	resp, frag = owner.do("POST", "/sessions/"+id+"/try", url.Values{"tool": {"mcp__everything__echo"}, "input": {`{"message": `}}, htmx)
	if resp.StatusCode != 422 || resp.Header.Get("HX-Retarget") != "#try-tool" ||
		!strings.Contains(fieldText(frag, "try-input-error"), "not valid JSON") || !strings.Contains(frag, `{&#34;message&#34;: </textarea>`) {
		t.Fatalf("bad JSON answered %d (retarget %q):\n%s", resp.StatusCode, resp.Header.Get("HX-Retarget"), frag)
	}
	// Without htmx the whole page answers, with the same message.
	resp, page := owner.post("/sessions/"+id+"/try", url.Values{"tool": {"mcp__everything__echo"}, "input": {`{"message": 42}`}})
	if resp.StatusCode != 422 || !strings.Contains(fieldText(page, "try-input-error"), "message") || !strings.Contains(page, "Call log") {
		t.Fatalf("a schema mismatch answered %d", resp.StatusCode)
	}
	w.api(w.owner, "GET", "/sessions/"+id+"/tool_calls", nil, &calls)
	if len(calls) != 1 {
		t.Fatalf("refused inputs were recorded as calls: %+v", calls)
	}
	// A viewer is not offered the form; a post anyway is refused, naming the
	// permission, in the flash box for htmx and on the error page without.
	viewer := w.person(owner, "viewer@example.com", "viewer")
	resp, frag = viewer.do("POST", "/sessions/"+id+"/try", url.Values{"tool": {"mcp__everything__echo"}, "input": {`{"message": "x"}`}}, htmx)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("HX-Retarget") != "#flash" || !strings.Contains(frag, "ToolCall.create") {
		t.Fatalf("a viewer's Try answered %d (retarget %q):\n%s", resp.StatusCode, resp.Header.Get("HX-Retarget"), frag)
	}
	if resp, page := viewer.post("/sessions/"+id+"/try", url.Values{"tool": {"mcp__everything__echo"}, "input": {`{"message": "x"}`}}); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "ToolCall.create") {
		t.Fatalf("a viewer's Try without htmx answered %d", resp.StatusCode)
	}
}

// events reads a session page's event stream.
type events struct {
	r      *bufio.Reader
	cancel context.CancelFunc
	resp   *http.Response
}

func (c *client) events(path string) *events {
	c.e.t.Helper()
	ctx, cancel := context.WithTimeout(c.e.t.Context(), 20*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", c.e.srv.URL+path, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		c.e.t.Fatal(err)
	}
	c.e.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return &events{r: bufio.NewReader(resp.Body), cancel: cancel, resp: resp}
}

// next reads one event: its name and its data lines joined.
func (ev *events) next(t *testing.T) (string, string) {
	t.Helper()
	var name string
	var data []string
	for {
		line, err := ev.r.ReadString('\n')
		if err != nil {
			t.Fatalf("event stream ended: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && name != "":
			return name, strings.Join(data, "\n")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case line == "" || strings.HasPrefix(line, ":"):
		default:
			t.Fatalf("a line of the stream is neither an event, data nor a comment: %q", line)
		}
	}
}

// until reads events until one named name has data containing want.
func (ev *events) until(t *testing.T, name, want string) string {
	t.Helper()
	for {
		n, data := ev.next(t)
		if n == name && strings.Contains(data, want) {
			return data
		}
	}
}

func TestSessionEventsStreamTheCallLog(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	ev := owner.events("/sessions/" + s.ID + "/events")
	if ct := ev.resp.Header.Get("Content-Type"); ev.resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events answered %d %q", ev.resp.StatusCode, ct)
	}
	got := map[string]bool{}
	for len(got) < 4 {
		name, _ := ev.next(t)
		got[name] = true
	}
	if !got["head"] || !got["pending"] || !got["calls"] || !got["rules"] {
		t.Fatalf("on connecting the stream sent %v", got)
	}
	w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "live one"}, 10)
	data := ev.until(t, "calls", "live one")
	if !strings.Contains(data, "mcp__everything__echo") || !strings.Contains(data, "\n") {
		t.Fatalf("the call log event is not the log's HTML over several data lines:\n%s", data)
	}
	w.call(s.Token, s.ID, "builtin__session__rename", map[string]any{"title": "Renamed live"}, 10)
	ev.until(t, "head", "Renamed live")
	// Without signing in, or for no such session, there is no stream.
	if resp, _ := w.browser().get("/sessions/" + s.ID + "/events"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("events without signing in answered %d", resp.StatusCode)
	}
	if resp, _ := owner.get("/sessions/ses_nope/events"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("events of no session answered %d", resp.StatusCode)
	}
}

// sseConnectRe finds the session page's stream (the navigation's badge has one too).
var sseConnectRe = regexp.MustCompile(`sse-connect="(/sessions/[^"]+)"`)

// A page's stream knows what the page showed: connecting to an unchanged
// page swaps nothing (no flicker, no form reset under the person's hands),
// and afterwards only the parts that changed are sent.
func TestSessionEventsSendOnlyWhatChangedSinceThePage(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	m := sseConnectRe.FindStringSubmatch(mustGet(owner, "/sessions/"+s.ID))
	if m == nil || !strings.Contains(m[1], "seen=") {
		t.Fatalf("the session page's stream URL is %v", m)
	}
	ev := owner.events(html.UnescapeString(m[1]))
	w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "after the page"}, 10)
	w.call(s.Token, s.ID, "builtin__session__rename", map[string]any{"title": "Renamed after the page"}, 10)
	sent := map[string]int{}
	for sent["head"] == 0 || sent["calls"] == 0 {
		name, data := ev.next(t)
		sent[name]++
		if name == "calls" && sent[name] == 1 && !strings.Contains(data, "after the page") {
			t.Fatalf("the first call log sent is the one the page already showed:\n%s", data)
		}
	}
	if sent["pending"] != 0 || sent["rules"] != 0 {
		t.Fatalf("parts that did not change were sent again: %v", sent)
	}
	// A reconnect long after the render (the same URL: the browser's or
	// htmx's retry) gets every part, as later events may have changed the page.
	stale := regexp.MustCompile(`at%3A\d+`).ReplaceAllString(html.UnescapeString(m[1]), "at%3A1")
	if !strings.Contains(stale, "at%3A1") {
		t.Fatalf("no render time in the stream URL %q", m[1])
	}
	all := owner.events(stale)
	got := map[string]bool{}
	for len(got) < 4 {
		name, _ := all.next(t)
		got[name] = true
	}
}

func TestDecisionsAndRulesOnTheSessionPage(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	page := "/sessions/" + s.ID
	_, c := w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	if body := mustGet(owner, page); !strings.Contains(body, `data-approval="`+c.Approval.ID+`"`) || !strings.Contains(body, `data-testid="approve-session"`) {
		t.Fatalf("the pending approval is not on the session page:\n%s", body)
	}
	// Approve and allow for this session: the call runs, a rule is listed, the next call runs without asking.
	resp, _ := owner.post("/approvals/"+c.Approval.ID+"/approve", url.Values{"scope": {"session"}, "back": {page}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != page {
		t.Fatalf("approve: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := w.waitFinal(s.Token, c.ID); got.Status != "succeeded" {
		t.Fatalf("the approved call: %+v", got)
	}
	body := mustGet(owner, page)
	if strings.Count(body, `data-testid="session-rule"`) != 1 || strings.Contains(body, `data-approval=`) || !strings.Contains(body, "allowed without asking") {
		t.Fatalf("after approving for the session the page shows:\n%s", body)
	}
	var rules []struct {
		ID, Tool  string
		CreatedBy string `json:"created_by"`
	}
	if st := w.api(w.owner, "GET", "/sessions/"+s.ID+"/rules", nil, &rules); st != 200 || len(rules) != 1 ||
		rules[0].Tool != "mcp__everything__get-env" || rules[0].CreatedBy != "owner@example.com" {
		t.Fatalf("SessionRule.list: %d %+v", st, rules)
	}
	if st, c := w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 10); st != 200 || c.Status != "succeeded" {
		t.Fatalf("with the rule the tool still asks: %d %+v", st, c)
	}

	// A viewer sees the rules and approvals but no buttons, and the API refuses them.
	viewer := w.person(owner, "viewer@example.com", "viewer")
	var p problem
	if st := w.api(viewer.token(), "DELETE", "/sessions/"+s.ID+"/rules/"+rules[0].ID, nil, &p); st != 403 || p.MissingPermission != "SessionRule.revoke session:"+s.ID {
		t.Fatalf("a viewer revoking a rule: %d %+v", st, p)
	}
	if vb := mustGet(viewer, page); !strings.Contains(vb, "mcp__everything__get-env") || strings.Contains(vb, `data-testid="revoke-rule"`) || strings.Contains(vb, `data-testid="try-form"`) {
		t.Fatal("the viewer's session page offers changes")
	}

	// Revoke: the tool asks first again.
	if resp, _ := owner.post(page+"/rules/"+rules[0].ID+"/revoke", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if body := mustGet(owner, page); strings.Contains(body, `data-testid="session-rule"`) || !strings.Contains(body, "asks first again") {
		t.Fatal("the revoked rule is still listed")
	}
	_, c = w.call(s.Token, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	if c.Status != "awaiting_approval" {
		t.Fatalf("after revoking, the call did not ask: %+v", c)
	}

	// Deny with a reason: the caller gets it. Deciding again is refused and says who decided.
	owner.post("/approvals/"+c.Approval.ID+"/deny", url.Values{"reason": {"not on production"}, "scope": {"call"}, "back": {page}})
	if got := w.waitFinal(s.Token, c.ID); got.Status != "refused" || !strings.Contains(got.Reason, "not on production") {
		t.Fatalf("the denied call: %+v", got)
	}
	resp, _ = owner.post("/approvals/"+c.Approval.ID+"/approve", url.Values{"back": {"https://evil.example/x"}})
	if resp.Header.Get("Location") != "/approvals" {
		t.Fatalf("an off-site back went to %q", resp.Header.Get("Location"))
	}
	if body := mustGet(owner, page); !strings.Contains(body, "Already denied by owner@example.com") {
		t.Fatal("deciding twice is not refused with who decided")
	}
	// The person who made a call may not decide it.
	_, own := w.call(w.owner, s.ID, "mcp__everything__get-env", map[string]any{}, 0)
	owner.post("/approvals/"+own.Approval.ID+"/approve", url.Values{"back": {page}})
	if body := mustGet(owner, page); !strings.Contains(body, "You made this call yourself") || !strings.Contains(body, `data-approval="`+own.Approval.ID+`"`) {
		t.Fatal("approving one's own call is not refused on the page")
	}
}

func TestAskUserAnsweredThenSessionEnded(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	s := w.session(w.vault)
	page := "/sessions/" + s.ID
	_, q := w.call(s.Token, s.ID, "builtin__ask_user__ask", map[string]any{"question": "Refund in full?", "choices": []string{"yes", "no"}}, 0)
	w.waitStatus(s.Token, q.ID, "waiting_client")
	if body := mustGet(owner, page); !strings.Contains(body, "Refund in full?") || strings.Count(body, `data-testid="answer-choice"`) != 2 {
		t.Fatalf("the question is not on the session page:\n%s", body)
	}
	if resp, _ := owner.post(page+"/calls/"+q.ID+"/answer", url.Values{"choice": {"no"}, "answer": {""}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("answer: %d", resp.StatusCode)
	}
	if got := w.waitFinal(s.Token, q.ID); got.Status != "succeeded" || string(got.Output) != `{"answer":"no"}` {
		t.Fatalf("the answered question: %+v %s", got, got.Output)
	}
	if body := mustGet(owner, page); strings.Contains(body, `data-testid="pending-question"`) {
		t.Fatal("the answered question is still waiting on the page")
	}

	// A connected client is listed with its tools, which the session then offers.
	if st := w.api(s.Token, "PUT", page+"/clients/web", map[string]any{"tools": []map[string]any{{"name": "highlight_row"}}}, nil); st != 200 {
		t.Fatalf("Client.connect: %d", st)
	}
	if body := mustGet(owner, page); !regexp.MustCompile(`<strong>web</strong> <span class="small mono">highlight_row</span>`).MatchString(body) ||
		!strings.Contains(body, `data-testid="offered-client__web__highlight_row"`) {
		t.Fatalf("the connected client is not on the page:\n%s", body)
	}
	// Refresh discovery re-asks the MCP server and says what the session offers now.
	owner.post(page+"/tools/refresh", url.Values{})
	if body := mustGet(owner, page); !strings.Contains(body, "Discovery refreshed: the session offers 15 tools.") {
		t.Fatal("Refresh discovery did not report the tools offered")
	}

	// A vault bound to the running session stays.
	owner.post("/vaults/"+w.vault+"/delete", url.Values{})
	if body := mustGet(owner, "/vaults/"+w.vault); !strings.Contains(body, "bound to 1 running session") {
		t.Fatal("deleting a vault in use is not refused with a message")
	}
	if resp, _ := owner.post(page+"/end", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("end: %d", resp.StatusCode)
	}
	body := mustGet(owner, page)
	if !strings.Contains(body, "Session ended.") || strings.Contains(body, `data-testid="session-end"`) ||
		strings.Contains(body, `data-testid="try-form"`) || sseConnectRe.MatchString(body) {
		t.Fatalf("the ended session's page:\n%s", body)
	}
	if st := w.api(s.Token, "GET", page, nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("the ended session's token answered %d", st)
	}
}

// newLoggedEnv is newEnv with the server's logs (web, runtime and the
// process default) kept at debug level instead of discarded.
func newLoggedEnv(t *testing.T) (*env, *logtest.Buffer) {
	t.Helper()
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(log)
	t.Cleanup(func() { slog.SetDefault(prev) })
	clk := &clock{now: time.Now().UTC()}
	rt := runtime.New(modelstest.Open(t), runtime.Options{Clock: clk, Log: log, AllowPrivateEgress: true})
	e := &env{t: t, rt: rt, clock: clk}
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: e.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: log})
	t.Cleanup(e.srv.Close)
	return e, logs
}

var hrefRe = regexp.MustCompile(`href="(/[^"]*)"`)

// crawl GETs every console page reachable by links from start, and returns
// each page's body by path.
func crawl(b *client, start ...string) map[string]string {
	b.e.t.Helper()
	seen := map[string]string{}
	queue := start
	for len(queue) > 0 && len(seen) < 300 {
		path := queue[0]
		queue = queue[1:]
		if _, ok := seen[path]; ok || strings.HasPrefix(path, "/static/") {
			continue
		}
		_, body := b.get(path)
		seen[path] = body
		for _, m := range hrefRe.FindAllStringSubmatch(body, -1) {
			queue = append(queue, html.UnescapeString(m[1]))
		}
	}
	return seen
}

// apiReads GETs every read of the JSON API, its path filled with the ids given.
func apiReads(e *env, token string, ids map[string]string) map[string]string {
	out := map[string]string{}
	fill := regexp.MustCompile(`:[a-z]+`)
	for _, r := range web.APIVerbs() {
		if r.Method != http.MethodGet {
			continue
		}
		path := fill.ReplaceAllStringFunc(r.Path, func(p string) string { return ids[p[1:]] })
		queries := []string{"", "?state=approved", "?state=denied", "?limit=500"}
		if r.Verb == "ClientCall.next" {
			queries = []string{"?wait=0"} // a long poll: not waited out
		}
		for _, q := range queries {
			_, body := e.rawAPI(token, "GET", path+q, "")
			out[r.Verb+" "+path+q] = string(body)
		}
	}
	return out
}

// TestSecretAppearsNowhere is the full run: create a vault, set a
// secret, call tools, export the version, view every page, read the logs.
func TestSecretAppearsNowhere(t *testing.T) {
	e, logs := newLoggedEnv(t)
	secret := fmt.Sprintf("sk-live-%d-ZX9q", time.Now().UnixNano())
	mcpURL := mcptest.StartEverything(t, secret)
	owner := e.owner()
	tok := owner.token()
	vault := owner.createVault("customer-a")
	if resp, _ := owner.post("/vaults/"+vault+"/credentials", url.Values{"prefix": {mcpURL}, "type": {"bearer"}, "secret": {secret}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("Set credential: %d", resp.StatusCode)
	}
	agent, draft := e.agentWithDraft(tok)
	if st, body := e.rawAPI(tok, "PUT", "/versions/"+draft.ID+"/config", strings.ReplaceAll(everythingConfig, "MCP_URL", mcpURL)); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	e.api(tok, "POST", "/versions/"+draft.ID+"/publish", nil, nil)
	w := &world{env: e, owner: tok, mcpURL: mcpURL, vault: vault, version: draft.ID, agent: agent}
	id, page := w.consoleSession(owner, "secrets", vault)
	sesToken := sessionTokenRe.FindString(page)

	// Calls that need the secret: they succeed only if it was attached.
	if st, c := w.call(sesToken, id, "mcp__everything__echo", map[string]any{"message": "over the API"}, 10); c.Status != "succeeded" {
		t.Fatalf("echo with the vault's credential: %d %+v", st, c)
	}
	_, ask := w.call(sesToken, id, "mcp__everything__get-env", map[string]any{}, 0)
	owner.post("/approvals/"+ask.Approval.ID+"/approve", url.Values{"back": {"/sessions/" + id}})
	w.waitFinal(sesToken, ask.ID)
	if _, frag := owner.do("POST", "/sessions/"+id+"/try", url.Values{"tool": {"mcp__everything__echo"}, "input": {`{"message":"console"}`}},
		map[string]string{"HX-Request": "true"}); !strings.Contains(frag, "Echo: console") {
		t.Fatalf("Try a tool:\n%s", frag)
	}
	owner.post("/sessions/"+id+"/tools/refresh", url.Values{})
	w.call(sesToken, id, "builtin__session__rename", map[string]any{"title": "renamed"}, 10)

	seen := map[string]string{}
	for path, body := range crawl(owner, "/", "/tokens", "/versions/"+draft.ID+"/export") {
		seen["page "+path] = body
	}
	ev := owner.events("/sessions/" + id + "/events")
	for i := range 4 {
		name, data := ev.next(t)
		seen[fmt.Sprintf("event %d %s", i, name)] = data
	}
	ev.cancel()
	ids := map[string]string{"agent": agent, "version": draft.ID, "vault": vault, "session": id, "call": ask.ID,
		"approval": ask.Approval.ID, "client": "web", "credential": "x", "skill": "x", "name": "x", "sandbox": "x", "user": "x", "token": "x", "rule": "x"}
	for k, v := range apiReads(e, tok, ids) {
		seen["api "+k] = v
	}
	for k, v := range apiReads(e, sesToken, ids) {
		seen["session api "+k] = v
	}
	seen["logs"] = logs.String()

	for where, body := range seen {
		if strings.Contains(body, secret) {
			t.Errorf("the secret's value appears in %s", where)
		}
	}
	// The search covered what it claims: the pages, the export, the calls' outputs, the audit log and the logs.
	for where, want := range map[string]string{
		"page /versions/" + draft.ID + "/export":            mcpURL,
		"page /sessions/" + id:                              "Echo: console",
		"page /vaults/" + vault:                             "secret set",
		"api Action.list /actions?limit=500":                "Credential.set",
		"api ToolCall.list /sessions/" + id + "/tool_calls": "Echo: over the API",
		"logs": "route=/sessions/:session/try",
	} {
		if !strings.Contains(seen[where], want) {
			t.Errorf("%s was not searched (or lacks %q)", where, want)
		}
	}
	if len(seen) < 60 {
		t.Errorf("only %d pages and answers were searched", len(seen))
	}
}

func TestBrowserTryAToolUpdatesTheLiveLog(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	run("sign in and open the session",
		chromedp.Navigate(w.srv.URL+"/login"),
		chromedp.WaitVisible(css(`[data-testid=login-email]`)),
		chromedp.SendKeys(css(`[data-testid=login-email]`), "owner@example.com"),
		chromedp.SendKeys(css(`[data-testid=login-password]`), password),
		chromedp.Click(css(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=dashboard]`)),
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(css(`[data-testid=try-form]`)),
		// A reload would lose this mark.
		void(chromedp.Evaluate[bool](`window.stillThisPage = true`)),
		// The stream is open before anything happens.
		poll(`document.querySelector("[data-testid=session-live]").getAttribute("data-live") === "open"`),
	)
	run("pick session rename: its schema shows",
		chromedp.SetValue(css(`[data-testid=try-tool-name]`), "builtin__session__rename"),
		void(chromedp.Evaluate[bool](`document.querySelector("[data-testid=try-tool-name]").dispatchEvent(new Event("change", {bubbles: true}))`)),
		poll(`!document.querySelector('[data-schema-for="builtin__session__rename"]').hidden`),
	)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".try-schema:not([hidden])").length`)); err != nil || n != 1 {
		t.Fatalf("%d schemas are shown (%v)", n, err)
	}
	// Three steps, so a failure names what never came: the form's answer,
	// the call log's row or the head's new title.
	run("run it: the answer shows under the form",
		chromedp.SetValue(css(`[data-testid=try-input]`), `{"title": "Renamed in the browser"}`),
		chromedp.Click(css(`[data-testid=try-submit]`)),
		chromedp.WaitVisible(css(`[data-testid=try-result]`)),
	)
	run("run it: the call log shows the call",
		poll(`document.querySelector("#session-calls [data-testid=call-tool]")?.textContent === "builtin__session__rename"`),
	)
	run("run it: the head shows the new title",
		poll(`document.querySelector("[data-testid=session-title]").textContent === "Renamed in the browser"`),
	)
	screenshot(ctx, t, "session-try")
	if by := text(t, ctx, `#session-calls [data-testid=call-by]`); by != "owner@example.com" {
		t.Fatalf("the call log says the call was made by %q", by)
	}
	// An agent's call arrives on the open page too.
	w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "from the agent"}, 10)
	run("see the agent's call",
		poll(`document.querySelectorAll("#session-calls [data-testid=call-row]").length === 2 && document.querySelector("#session-calls").textContent.includes("from the agent")`),
	)
	if still, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.stillThisPage === true`)); err != nil || !still {
		t.Fatalf("the page was reloaded (%v)", err)
	}
	screenshot(ctx, t, "session-live")
}
