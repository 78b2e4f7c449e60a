package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// flakyMCP puts a switch in front of the MCP server: while down, every
// request gets a 503, as from a server being redeployed.
func flakyMCP(t *testing.T, target string) (string, *atomic.Bool) {
	t.Helper()
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.FlushInterval = -1
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "redeploying", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path, &down
}

// What the session page says about discovery agrees with the tools it
// lists, and a failure stops being shown once the server answers again.
func TestDiscoveryMessagesAgreeWithTheListAndClear(t *testing.T) {
	w := newWorld(t, everythingConfig)
	flaky, down := flakyMCP(t, w.mcpURL)
	if s := w.api(w.owner, "PUT", "/vaults/"+w.vault+"/credentials", map[string]any{"prefix": flaky, "type": "bearer", "secret": mcpToken}, nil); s != 200 {
		t.Fatalf("Credential.set: %d", s)
	}
	var draft version
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", strings.ReplaceAll(everythingConfig, "MCP_URL", flaky)); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := w.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	owner := w.browserOf()
	var s session
	down.Store(true)
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": draft.ID, "vaults": []string{w.vault}}, &s); st != 201 {
		t.Fatalf("Session.create: %d", st)
	}
	page := mustGet(owner, "/sessions/"+s.ID)
	if !strings.Contains(page, `data-testid="undiscovered-everything"`) || strings.Contains(page, `data-testid="offered-mcp__everything__echo"`) {
		t.Fatalf("with the server down from the start, the page does not say its tools are missing:\n%s", page)
	}

	// The server is back: after the retry pause the page lists its tools and no failure.
	down.Store(false)
	w.clock.Advance(2 * time.Minute)
	page = mustGet(owner, "/sessions/"+s.ID)
	if strings.Contains(page, `data-testid="undiscovered-everything"`) || !strings.Contains(page, `data-testid="offered-mcp__everything__echo"`) {
		t.Fatalf("with the server back, the page still shows the failure or lacks its tools:\n%s", page)
	}

	// Down again: a refresh keeps the last good list, and every message says so,
	// none that its tools are missing.
	down.Store(true)
	resp, page := owner.submit("/sessions/"+s.ID+"/tools/refresh", url.Values{})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %d", resp.StatusCode)
	}
	if !strings.Contains(page, `data-testid="offered-mcp__everything__echo"`) {
		t.Fatalf("the last good list is not offered:\n%s", page)
	}
	if !strings.Contains(page, `data-testid="stale-everything"`) || !strings.Contains(page, "its last known tools are offered") ||
		!strings.Contains(page, "keep their last known tools") || strings.Contains(page, "tools are missing") {
		t.Fatalf("the messages disagree with the list:\n%s", page)
	}

	// Back again: a call it answers is proof enough, within the retry pause.
	down.Store(false)
	if _, c := w.call(s.Token, s.ID, "mcp__everything__echo", map[string]any{"message": "back"}, 10); c.Status != "succeeded" {
		t.Fatalf("the call: %+v", c)
	}
	if page = mustGet(owner, "/sessions/"+s.ID); strings.Contains(page, `data-testid="stale-everything"`) || strings.Contains(page, `data-testid="undiscovered-everything"`) {
		t.Fatalf("with the server back and answering, the page still says discovery failed:\n%s", page)
	}
}
