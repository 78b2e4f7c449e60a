package mcpclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// An ended Subako session's upstream MCP sessions are closed at once (the
// server sees the session DELETE), not left to the idle timer, and other
// sessions keep theirs.
func TestForgetEndsOnlyThatSessionsUpstreamSessions(t *testing.T) {
	server := mcptest.NewServer(mcptest.Echo())
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var deletes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	pool := newPool(t, mcpclient.Options{IdleTimeout: time.Hour})
	ctx := context.Background()
	for _, key := range []string{"ses_a/cred1", "ses_a/cred2", "ses_ab/cred1"} {
		if _, err := pool.Call(ctx, srv.URL, key, nil, "echo", echoArgs); err != nil {
			t.Fatal(err)
		}
	}
	pool.Forget("ses_a/")
	if n := pool.Len(); n != 1 {
		t.Fatalf("%d cached sessions after forgetting ses_a, want 1 (ses_ab's)", n)
	}
	for deadline := time.Now().Add(10 * time.Second); deletes.Load() != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server saw %d session DELETEs, want 2", deletes.Load())
		}
	}
	if _, err := pool.Call(ctx, srv.URL, "ses_ab/cred1", nil, "echo", echoArgs); err != nil {
		t.Fatalf("the other session's upstream session stopped working: %v", err)
	}
}
