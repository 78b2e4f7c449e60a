package mcpclient_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/egress"
	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// A version's MCP server URL pointing at the server's own network is refused
// before any request leaves, unless the operator allowed private egress.
func TestPrivateEgressIsRefusedUnlessAllowed(t *testing.T) {
	srv := startRecorder(t, mcptest.Echo())
	guarded := mcpclient.NewPool(mcpclient.Options{})
	t.Cleanup(func() { guarded.Close() })

	_, err := guarded.Call(context.Background(), srv.url, "c", nil, "echo", echoArgs)
	want := "egress to 127.0.0.1 is refused: private and loopback addresses are blocked; start the server with --egress-allow-private to allow them"
	if !errors.Is(err, mcpclient.ErrEgressRefused) || !errors.Is(err, egress.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Call to a loopback server by default = %v; want it refused with %q", err, want)
	}
	if n := srv.handshakes(); n != 0 {
		t.Fatalf("the loopback server saw %d handshakes despite the refusal", n)
	}

	res, err := newPool(t, mcpclient.Options{}).Call(context.Background(), srv.url, "c", nil, "echo", echoArgs)
	if err != nil || res.Text != "Echo: hi" {
		t.Fatalf("Call with private egress allowed = %q, %v; want the echo", res.Text, err)
	}
}

// Errors reach the model and the logs: a token in a URL's query, user info or
// fragment must not ride along with them.
func TestErrorsDropURLSecrets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream broke", http.StatusBadGateway)
	}))
	t.Cleanup(failing.Close)
	other := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp?token=secret", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	const tail = "/mcp?token=secret#secret"
	tests := []struct {
		name     string
		url      string
		allow    bool
		wantKind error
	}{
		{"egress refused", failing.URL + tail, false, mcpclient.ErrEgressRefused},
		{"nothing listening", "http://user:secret@" + down + tail, true, mcpclient.ErrUnreachable},
		{"server error", failing.URL + tail, true, nil},
		{"redirect elsewhere", redirector.URL + tail, true, mcpclient.ErrRedirect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mcpclient.NewPool(mcpclient.Options{AllowPrivate: tc.allow})
			defer p.Close()
			_, err := p.Call(context.Background(), tc.url, "c", nil, "echo", echoArgs)
			if err == nil || (tc.wantKind != nil && !errors.Is(err, tc.wantKind)) {
				t.Fatalf("Call = %v, want an error of kind %v", err, tc.wantKind)
			}
			if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "/mcp") {
				t.Fatalf("error %q repeats the URL's secret or does not name the server", err)
			}
		})
	}
}
