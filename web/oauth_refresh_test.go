package web_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/runtime/oauth/oauthtest"
)

// An access token close to its expiry is refreshed before it is used: the
// MCP server never sees an expired token.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{AccessTTL: time.Hour})
	version := w.publish(secureConfig)
	w.connectHTTP()
	s := w.newSession(version)
	if c := w.callTool(s, "mcp__secure__echo", map[string]any{"text": "fresh"}); c.Status != "succeeded" {
		t.Fatalf("echo: %+v", c)
	}
	if st := w.as.Stats(); st.Refreshes != 0 {
		t.Fatalf("a fresh token was refreshed: %+v", st)
	}
	// Subako's clock: 59 minutes 30 seconds later, the token has 30 s left.
	w.clock.Advance(59*time.Minute + 30*time.Second)
	before := w.as.Stats()
	if c := w.callTool(s, "mcp__secure__echo", map[string]any{"text": "near expiry"}); c.Status != "succeeded" {
		t.Fatalf("echo near expiry: %+v", c)
	}
	after := w.as.Stats()
	if after.Refreshes != before.Refreshes+1 || after.Unauthorized != before.Unauthorized {
		t.Fatalf("near expiry: %d refreshes and %d refused tokens, want 1 and 0", after.Refreshes-before.Refreshes, after.Unauthorized-before.Unauthorized)
	}
	w.searchSecrets()
}

// Calls at the same time that all find the access token expired refresh it
// once: with refresh-token rotation a second refresh with the old token
// would be refused and the credential wrongly marked "needs reconnecting".
func TestOAuthConcurrentCallsRefreshOnce(t *testing.T) {
	w := newOAuthWorld(t, oauthtest.Options{})
	version := w.publish(secureConfig)
	w.connectHTTP()
	s := w.newSession(version)
	if c := w.callTool(s, "mcp__secure__echo", map[string]any{"text": "warm"}); c.Status != "succeeded" {
		t.Fatalf("echo: %+v", c)
	}
	w.as.ExpireAccessTokens()
	const n = 6
	var wg sync.WaitGroup
	calls := make([]call, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c call
			w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": "mcp__secure__echo",
				"input": map[string]any{"text": fmt.Sprint("parallel ", i)}, "model": "m", "wait_seconds": 20}, &c)
			calls[i] = c
		}()
	}
	wg.Wait()
	for i, c := range calls {
		if c.Status != "succeeded" || !strings.Contains(string(c.Output), fmt.Sprint("parallel ", i)) {
			t.Errorf("parallel call %d: %+v %s", i, c, c.Output)
		}
	}
	if st := w.as.Stats(); st.Refreshes != 1 || st.RefreshFailures != 0 {
		t.Fatalf("%d calls after expiry: %d refreshes, %d refused, want 1 and 0", n, st.Refreshes, st.RefreshFailures)
	}
	if got := credentialStatus(w.page("/vaults/" + w.vault)); !strings.Contains(got, "connected") || strings.Contains(got, "reconnect") {
		t.Fatalf("after the parallel calls the status reads %q", got)
	}
}
