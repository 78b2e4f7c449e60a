package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// headerServer is a server for inside a sandbox: / serves the folder, as
// python3 -m http.server does, and /headers answers the request's headers
// with a cookie of its own, which the preview must not pass on.
const headerServer = `import base64, hashlib, http.server
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def do_GET(self):
        if self.path.startswith('/ws'):
            key = self.headers['Sec-WebSocket-Key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
            self.send_response(101)
            self.send_header('Upgrade', 'websocket')
            self.send_header('Connection', 'Upgrade')
            self.send_header('Sec-WebSocket-Accept', base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
            self.end_headers()
            self.wfile.flush()
            while True:
                b = self.connection.recv(4096)
                if not b:
                    break
                self.connection.sendall(b)
            self.close_connection = True
            return
        if self.path.startswith('/headers'):
            b = str(self.headers).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain')
            self.send_header('Set-Cookie', 'stolen=1; Path=/')
            self.send_header('Content-Length', str(len(b)))
            self.end_headers()
            self.wfile.write(b)
            return
        return super().do_GET()
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), H).serve_forever()
`

// serveInside starts command as an exec that runs in the background (its
// server is served while the exec runs) and waits until the session's
// Sandboxes tab lists port 8000. It returns the exec's call.
func (w *world) serveInside(b *client, s session, command string) call {
	w.t.Helper()
	var c call
	body := map[string]any{"tool": execTool, "input": map[string]any{"command": command, "timeout_secs": 120}, "wait_seconds": 0}
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", body, &c); st != 200 && st != 202 {
		w.t.Fatalf("start the server: %d %+v", st, c)
	}
	for range 150 {
		if _, page := b.get("/sessions/" + s.ID + "/sandboxes"); strings.Contains(page, `data-port="8000"`) {
			return c
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.t.Fatalf("port 8000 was never listed on the Sandboxes tab")
	return c
}

func TestSandboxPortPreview(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	owner := w.browser()
	if resp, _ := owner.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	viewer := w.person(owner, "viewer@example.com", "viewer")
	s := w.session()
	w.exec(s, "mkdir -p site && echo '<h1>made inside</h1>' > site/index.html && cat > site/serve.py <<'EOF'\n"+headerServer+"EOF")
	srv := w.serveInside(owner, s, "cd site && python3 serve.py")
	sbx := w.sandboxOf(s).ID

	// The console's entry records the open and sends the browser on.
	resp, _ := owner.get("/sandboxes/" + sbx + "/ports/8000/")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sandbox-preview/") {
		t.Fatalf("open port 8000: %d to %q", resp.StatusCode, loc)
	}
	if a, ok := w.actionFor("verb=Sandbox.port", sbx); !ok || a.Verdict != "allowed" {
		t.Fatalf("the open is not an allowed Sandbox.port Action: %+v", a)
	}
	resp, page := owner.get(loc)
	if resp.StatusCode != 200 || !strings.Contains(page, "made inside") {
		t.Fatalf("the preview answered %d %q", resp.StatusCode, page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox ") || strings.Contains(csp, "allow-same-origin") {
		t.Fatalf("the preview's policy is %q; want a sandbox without allow-same-origin", csp)
	}

	// Neither the console's cookie nor an Authorization header reaches the
	// app, and the app's cookie does not reach the browser.
	req, _ := http.NewRequest("GET", w.srv.URL+loc+"headers", nil)
	req.Header.Set("Authorization", "Bearer "+w.owner)
	u, _ := url.Parse(w.srv.URL)
	cookies := owner.http.Jar.Cookies(u)
	if len(cookies) == 0 {
		t.Fatal("the owner's browser holds no cookie")
	}
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	hresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if hresp.StatusCode != 200 || !strings.Contains(string(seen), "Host: localhost:8000") {
		t.Fatalf("the app's /headers answered %d %q", hresp.StatusCode, seen)
	}
	for _, secret := range []string{"Cookie", "Authorization", w.owner, cookies[0].Value} {
		if strings.Contains(string(seen), secret) {
			t.Fatalf("the app received %q:\n%s", secret, seen)
		}
	}
	if sc := hresp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Fatalf("the app's Set-Cookie reached the browser: %q", sc)
	}

	// A websocket upgrade goes through, and its bytes both ways.
	ws, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fmt.Fprintf(ws, "GET %sws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", loc, u.Host)
	br := bufio.NewReader(ws)
	wresp, err := http.ReadResponse(br, nil)
	if err != nil || wresp.StatusCode != http.StatusSwitchingProtocols || wresp.Header.Get("Sec-Websocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("websocket upgrade through the preview: %v %+v", err, wresp)
	}
	ws.Write([]byte("echo me"))
	echoed := make([]byte, 7)
	if _, err := io.ReadFull(br, echoed); err != nil || string(echoed) != "echo me" {
		t.Fatalf("websocket bytes through the preview: %q %v", echoed, err)
	}

	// A viewer may not open a port, in the console or the API.
	if resp, _ := viewer.get("/sandboxes/" + sbx + "/ports/8000/"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a viewer opening a port: %d", resp.StatusCode)
	}
	if _, page := viewer.get("/sessions/" + s.ID + "/sandboxes"); !strings.Contains(page, `data-port="8000"`) || strings.Contains(page, "port-preview") {
		t.Fatalf("a viewer's Sandboxes tab: lists the port without a Preview link? %v %v", strings.Contains(page, `data-port="8000"`), strings.Contains(page, "port-preview"))
	}
	var p problem
	if st := w.api(viewer.token(), "POST", "/sandboxes/"+sbx+"/ports/8000", nil, &p); st != 403 {
		t.Fatalf("a viewer's Sandbox.port on the API: %d %+v", st, p)
	}
	if a, ok := w.actionFor("verb=Sandbox.port&verdict=refused", sbx); !ok {
		t.Fatalf("the viewer's refusal is not recorded: %+v", a)
	}

	// The API answers the preview's path; a forged or altered ticket is refused.
	var pv struct {
		Path   string `json:"path"`
		Ticket string `json:"ticket"`
	}
	if st := w.api(w.owner, "POST", "/sandboxes/"+sbx+"/ports/8000", nil, &pv); st != 200 || !strings.HasPrefix(pv.Path, "/sandbox-preview/") {
		t.Fatalf("Sandbox.port on the API: %d %+v", st, pv)
	}
	if resp, page := w.browser().get(pv.Path); resp.StatusCode != 200 || !strings.Contains(page, "made inside") {
		t.Fatalf("the API's preview path answered %d %q", resp.StatusCode, page)
	}
	forged := regexp.MustCompile(`\.[A-Za-z0-9_-]{4}`).ReplaceAllString(pv.Ticket, ".AAAA")
	if resp, _ := w.browser().get("/sandbox-preview/" + forged + "/"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a forged ticket: %d", resp.StatusCode)
	}
	if st := w.api(w.owner, "POST", "/sandboxes/"+sbx+"/ports/70000", nil, &p); st != 422 || p.Field != "port" {
		t.Fatalf("port 70000: %d %+v", st, p)
	}

	// A port nothing listens on says so.
	resp, _ = owner.get("/sandboxes/" + sbx + "/ports/8001/")
	if resp, page := owner.get(resp.Header.Get("Location")); resp.StatusCode != http.StatusConflict || !strings.Contains(page, "nothing answers on port 8001") {
		t.Fatalf("port 8001: %d %q", resp.StatusCode, page)
	}

	// Suspended: the server ended with the machine, and the entry says so.
	if st := w.api(w.owner, "POST", "/tool_calls/"+srv.ID+"/cancel", map[string]any{}, nil); st != 200 {
		t.Fatalf("cancel the server's exec: %d", st)
	}
	w.waitFinal(s.Token, srv.ID)
	// The cancelled exec returns a moment after its call is recorded.
	for i := 0; w.sandboxOf(s).State != "suspended"; i++ {
		if i == 50 {
			t.Fatalf("the sandbox is %s", w.sandboxOf(s).State)
		}
		time.Sleep(100 * time.Millisecond)
		w.advance(sandbox.DefaultIdleTimeout + time.Minute)
	}
	if resp, page := owner.get("/sandboxes/" + sbx + "/ports/8000/"); resp.StatusCode != http.StatusConflict || !strings.Contains(page, "is suspended") {
		t.Fatalf("a suspended sandbox's port: %d %q", resp.StatusCode, page)
	}
	if resp, page := owner.get(loc); resp.StatusCode != http.StatusConflict || !strings.Contains(page, "not running") {
		t.Fatalf("an open preview of a suspended sandbox: %d %q", resp.StatusCode, page)
	}
}

// A long exec's output reaches the official TypeScript SDK client as
// progress notifications before the result, which keeps today's shape.
func TestSandboxExecOutputAsProgress(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "true") // the machine is up: the timing below is the command's
	lines := tsProgressClient(t, w.srv.URL+"/mcp/sessions/"+s.ID, s.Token, "call", execTool,
		map[string]any{"command": "for i in 1 2 3; do echo $i; sleep 1; done"})
	until(t, lines, "connected", 30*time.Second)
	res, seen := until(t, lines, "result", 60*time.Second)
	var outputs []progressLine
	for _, l := range seen {
		if l.Type == "progress" && l.message() != "running" {
			outputs = append(outputs, l)
		}
	}
	var joined string
	for _, l := range outputs {
		joined += l.message()
	}
	if joined != "1\n2\n3\n" {
		t.Fatalf("the output in progress notifications: %q (%+v)", joined, seen)
	}
	if gap := res.At - outputs[0].At; gap < 1500 {
		t.Fatalf("the first output came %d ms before the result: not as it happened", gap)
	}
	for i := 1; i < len(outputs); i++ {
		if outputs[i].Progress <= outputs[i-1].Progress {
			t.Fatalf("progress does not grow: %+v", outputs)
		}
	}
	var result struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(res.Result, &result); err != nil || len(result.Content) == 0 {
		t.Fatalf("result %s", res.Result)
	}
	var out execOutput
	if err := json.Unmarshal([]byte(result.Content[0].Text), &out); err != nil || out.Stdout != "1\n2\n3\n" || out.ExitCode != 0 {
		t.Fatalf("the result is not today's shape: %s", result.Content[0].Text)
	}
}

// liveText is the text of every exec's live output on the session page
// (the server's exec is one of them, printing its access log).
const liveText = `Array.from(document.querySelectorAll("[data-testid=live-output-text]")).map(e => e.textContent).join("\n")`

// In Chromium: the Sandboxes tab lists the port with a Preview link, the
// preview renders the page python3 -m http.server serves inside, in an
// opaque origin that cannot read the console's cookie; the session page
// shows a long exec's output as it happens.
func TestBrowserSandboxPortPreviewAndLiveOutput(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	owner := w.browser()
	if resp, _ := owner.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	s := w.session()
	w.exec(s, "mkdir -p site && echo '<h1 id=made>made inside</h1>' > site/index.html")
	w.serveInside(owner, s, "cd site && python3 -m http.server 8000")

	ctx := browserCtx(t)
	run := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); steps(t, ctx, what, a...) }
	signIn(t, ctx, w.world, "owner@example.com")
	run("open the session's Sandboxes tab",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID+"/sandboxes"),
		chromedp.WaitVisible(css(`[data-testid=port-preview]`)),
	)
	screenshot(ctx, t, "sandbox-ports")
	href := attr(t, ctx, `[data-testid=port-preview]`, "href")
	if !strings.HasSuffix(href, "/ports/8000/") {
		t.Fatalf("the Preview link is %q", href)
	}
	run("open the preview",
		chromedp.Navigate(w.srv.URL+href),
		chromedp.WaitVisible(css(`#made`)),
	)
	screenshot(ctx, t, "sandbox-port-preview")
	cookie, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { try { return "read: " + document.cookie } catch (e) { return "blocked: " + e.name } })()`))
	if err != nil || cookie != "blocked: SecurityError" {
		t.Fatalf("the preview's script reading the console's cookie: %q %v", cookie, err)
	}
	origin, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.origin`))
	if err != nil || origin != "null" {
		t.Fatalf("the preview runs in origin %q (%v); want an opaque one", origin, err)
	}
	// Its script cannot use the console's API as the person.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/v1/sessions", {credentials: "include"}).then(r => "status " + r.status, e => "failed: " + e.name)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status == "status 200" {
		t.Fatalf("the preview's script called the API: %q %v", status, err)
	}

	run("open the session page",
		chromedp.Navigate(w.srv.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(css(`[data-testid=session-output]`)),
	)
	started := w.callAsync(s.Token, s.ID, execTool, map[string]any{"command": "for i in 1 2 3; do echo line$i; sleep 1; done"}, 60)
	run("see the first lines while it runs",
		poll(liveText+`.includes("line2")`),
	)
	select {
	case c := <-started:
		t.Fatalf("the exec ended (%s) before its output showed", c.Status)
	default:
	}
	if txt, _ := chromedp.Run(ctx, chromedp.Evaluate[string](liveText)); strings.Contains(txt, "line3") {
		t.Fatalf("the live output already holds the last line: %q", txt)
	}
	screenshot(ctx, t, "session-live-output")
	c := <-started
	if c.Status != "succeeded" {
		t.Fatalf("the exec: %+v", c)
	}
	run("the live output goes once the exec has ended",
		poll(`!`+liveText+`.includes("line")`),
	)
}
