package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox/local"
)

// trailerServer answers every GET chunked, with a Set-Cookie and another
// field in its trailer: a cookie for the console's origin hidden after the
// body.
const trailerServer = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Transfer-Encoding', 'chunked')
        self.send_header('Trailer', 'Set-Cookie, X-Later')
        self.end_headers()
        self.wfile.write(b'5\r\nhello\r\n0\r\nSet-Cookie: subako_session=planted; Path=/\r\nX-Later: yes\r\n\r\n')
        self.wfile.flush()
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), H).serve_forever()
`

// TestSandboxPortPreviewPassesNoTrailer: an app inside that hides a
// Set-Cookie for the console's origin in its answer's trailer gets neither
// it nor any other trailer field to the browser.
func TestSandboxPortPreviewPassesNoTrailer(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	owner := w.browser()
	if resp, _ := owner.post("/login", url.Values{"email": {"owner@example.com"}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	s := w.session()
	w.exec(s, "cat > serve.py <<'EOF'\n"+trailerServer+"EOF")
	w.serveInside(owner, s, "python3 serve.py")
	sbx := w.sandboxOf(s).ID
	resp, _ := owner.get("/sandboxes/" + sbx + "/ports/8000/")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sandbox-preview/") {
		t.Fatalf("open port 8000: %d to %q", resp.StatusCode, loc)
	}
	presp, err := http.Get(w.srv.URL + loc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("the preview answered %d %q", presp.StatusCode, body)
	}
	if len(presp.Trailer) != 0 || len(presp.Header.Values("Set-Cookie")) != 0 || presp.Header.Get("Trailer") != "" {
		t.Fatalf("the app's trailer reached the browser: header %v, trailer %v", presp.Header, presp.Trailer)
	}
}
