package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

var echoArgs = json.RawMessage(`{"message":"hi"}`)

// local lets a pool reach the loopback addresses every test server listens on.
var local = mcpclient.Options{AllowPrivate: true}

func newPool(t *testing.T, opts mcpclient.Options) *mcpclient.Pool {
	opts.AllowPrivate = true
	p := mcpclient.NewPool(opts)
	t.Cleanup(func() { p.Close() })
	return p
}

// discoverOnce and callOnce are mcpclient.Discover and mcpclient.Call for a
// server on loopback: a session of their own, closed before they return.
func discoverOnce(url string, attach func(*http.Request)) ([]mcpclient.Tool, error) {
	p := mcpclient.NewPool(local)
	defer p.Close()
	d, err := p.Discover(context.Background(), url, "", attach)
	return d.Tools, err
}

func callOnce(ctx context.Context, url string, attach func(*http.Request), tool string, args json.RawMessage) (mcpclient.Result, error) {
	p := mcpclient.NewPool(local)
	defer p.Close()
	return p.Call(ctx, url, "", attach, tool, args)
}

func TestDiscoverFollowsPages(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	var tools []mcptest.Tool
	for _, n := range names {
		tools = append(tools, mcptest.Named(n))
	}
	url := mcptest.StartGoServer(t, token, tools...)
	got, err := discoverOnce(url, bearer(token))
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, tool := range got {
		gotNames = append(gotNames, tool.Name)
	}
	if !slices.Equal(gotNames, names) {
		t.Fatalf("Discover over pages of %d = %v, want %v", mcptest.PageSize, gotNames, names)
	}
}

func TestCallOutcomes(t *testing.T) {
	url := mcptest.StartGoServer(t, token, mcptest.Echo(), mcptest.Fail(), mcptest.Sleep())
	pool := newPool(t, mcpclient.Options{Timeout: 300 * time.Millisecond})
	tests := []struct {
		name      string
		tool      string
		args      string
		wantText  string
		wantIsErr bool
		wantErr   string
		wantKind  error
	}{
		{"echo", "echo", `{"message":"hi"}`, "Echo: hi", false, "", nil},
		{"no arguments", "fail", ``, "failed on purpose", true, "", nil},
		{"tool failure is a result", "fail", `{}`, "failed on purpose", true, "", nil},
		{"unknown tool", "nope", `{}`, "", false, `has no tool "nope"`, mcpclient.ErrUnknownTool},
		{"arguments not an object", "echo", `["hi"]`, "", false, "must be a JSON object", nil},
		{"invalid JSON arguments", "echo", `{"message":`, "", false, "must be a JSON object", nil},
		{"no tool name", "", `{}`, "", false, "tool name is required", nil},
		{"slow tool", "sleep", `{"ms":5000}`, "", false, "did not answer within 300ms", mcpclient.ErrTimeout},
		{"after a timeout the next call works", "echo", `{"message":"again"}`, "Echo: again", false, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := pool.Call(context.Background(), url, "c", bearer(token), tc.tool, json.RawMessage(tc.args))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Call error = %v, want one containing %q", err, tc.wantErr)
				}
				if tc.wantKind != nil && !errors.Is(err, tc.wantKind) {
					t.Fatalf("Call error %v is not %v", err, tc.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.wantIsErr || !strings.Contains(res.Text, tc.wantText) {
				t.Fatalf("Call = {Text: %q, IsError: %v}, want %q, IsError %v", res.Text, res.IsError, tc.wantText, tc.wantIsErr)
			}
		})
	}
}

func TestCallerCancel(t *testing.T) {
	url := mcptest.StartGoServer(t, token, mcptest.Sleep())
	pool := newPool(t, mcpclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := pool.Call(ctx, url, "c", bearer(token), "sleep", json.RawMessage(`{"ms":5000}`))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, mcpclient.ErrTimeout) {
		t.Fatalf("Call with the caller's deadline = %v; want the caller's deadline, not the server blamed", err)
	}
}

func TestPoolReusesSessions(t *testing.T) {
	srv := startRecorder(t, mcptest.Echo())
	pool := newPool(t, mcpclient.Options{})
	ctx := context.Background()
	for range 5 {
		if _, err := pool.Call(ctx, srv.url, "cred-a", nil, "echo", echoArgs); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.handshakes(); n != 1 {
		t.Fatalf("5 calls with one credential made %d handshakes, want 1", n)
	}
	if _, err := pool.Call(ctx, srv.url, "cred-b", nil, "echo", echoArgs); err != nil {
		t.Fatal(err)
	}
	if n := srv.handshakes(); n != 2 {
		t.Fatalf("a second credential made %d handshakes in all, want 2 (sessions are per credential)", n)
	}
	for range 3 {
		if _, err := callOnce(ctx, srv.url, nil, "echo", echoArgs); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.handshakes(); n != 5 {
		t.Fatalf("3 one-shot calls made %d handshakes in all, want 5", n)
	}
}

func TestChangedSecretReachesCachedSession(t *testing.T) {
	srv := startRecorder(t, mcptest.Echo())
	pool := newPool(t, mcpclient.Options{})
	for _, secret := range []string{"old-secret", "new-secret"} {
		if _, err := pool.Call(context.Background(), srv.url, "cred-a", bearer(secret), "echo", echoArgs); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Bearer old-secret", "Bearer new-secret"}
	if got := srv.callAuths(); !slices.Equal(got, want) || srv.handshakes() != 1 {
		t.Fatalf("server saw %q over %d handshakes, want %q over 1", got, srv.handshakes(), want)
	}
}

func TestForgottenSessionIsReplaced(t *testing.T) {
	srv := startRecorder(t, mcptest.Echo())
	pool := newPool(t, mcpclient.Options{})
	if _, err := pool.Call(context.Background(), srv.url, "c", nil, "echo", echoArgs); err != nil {
		t.Fatal(err)
	}
	srv.restart()
	res, err := pool.Call(context.Background(), srv.url, "c", nil, "echo", echoArgs)
	if err != nil || res.Text != "Echo: hi" {
		t.Fatalf("call after the server forgot the session = %q, %v; want it to reconnect and answer", res.Text, err)
	}
	if n := srv.handshakes(); n != 2 {
		t.Fatalf("%d handshakes, want 2", n)
	}
}

func TestIdleSessionsClose(t *testing.T) {
	url := mcptest.StartGoServer(t, token, mcptest.Echo())
	pool := newPool(t, mcpclient.Options{IdleTimeout: 20 * time.Millisecond})
	if _, err := pool.Call(context.Background(), url, "c", bearer(token), "echo", echoArgs); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for pool.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("an idle session was never closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := pool.Call(context.Background(), url, "c", bearer(token), "echo", echoArgs); err != nil {
		t.Fatalf("call after the idle session closed: %v", err)
	}
}

func TestCredentialNeverLeavesItsOrigin(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	_, err := discoverOnce(redirector.URL+"/mcp", bearer(token))
	if !errors.Is(err, mcpclient.ErrRedirect) || !strings.Contains(err.Error(), "redirected to "+other.URL) {
		t.Fatalf("Discover through a cross-origin redirect = %v, want a refused redirect", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the other origin received %d requests", n)
	}
}

func TestRefusalBodyStaysOutOfErrors(t *testing.T) {
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			echoing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "you sent "+r.Header.Get("Authorization"), code)
			}))
			t.Cleanup(echoing.Close)
			_, err := discoverOnce(echoing.URL, bearer("very-secret"))
			if !errors.Is(err, mcpclient.ErrCredentialRefused) || !strings.Contains(err.Error(), fmt.Sprintf("refused the credential (%d)", code)) {
				t.Fatalf("Discover = %v, want the credential refused with %d", err, code)
			}
			if strings.Contains(err.Error(), "very-secret") {
				t.Fatalf("error %q repeats the secret", err)
			}
		})
	}
}

func TestPoolErrors(t *testing.T) {
	closed := mcpclient.NewPool(mcpclient.Options{})
	closed.Close()
	tests := []struct {
		name string
		pool *mcpclient.Pool
		url  string
		want string
	}{
		{"closed pool", closed, "http://127.0.0.1:1/mcp", "pool is closed"},
		{"not http", newPool(t, mcpclient.Options{}), "ftp://x.example/mcp", "absolute http or https URL"},
		{"relative", newPool(t, mcpclient.Options{}), "/mcp", "absolute http or https URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.pool.Call(context.Background(), tc.url, "c", nil, "echo", echoArgs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Call = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
