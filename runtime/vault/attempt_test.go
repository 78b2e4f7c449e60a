package vault_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/vault"
)

// refreshing attaches "old" until a retry asks for a refresh, then "new".
func refreshing(refreshable bool, refreshes *int) func(*http.Request) {
	return func(req *http.Request) {
		tok := "old"
		if a := vault.AttemptOf(req); a != nil {
			a.Refreshable = refreshable
			if a.Retry {
				*refreshes++
				tok = "new"
				a.Expired = &vault.ExpiredError{Vault: "acme", Prefix: "https://x.example/mcp", Reason: "refused"}
			}
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
}

func TestRoundTripRetriesOnceAfter401(t *testing.T) {
	tests := []struct {
		name          string
		refreshable   bool
		accept        string // the token the server accepts
		wantStatus    int
		wantRequests  int
		wantRefreshes int
		wantExpired   bool
	}{
		{"refreshed token accepted", true, "new", 200, 2, 1, false},
		{"current token accepted", true, "old", 200, 1, 0, false},
		{"static credential: the 401 is the answer", false, "new", 401, 1, 0, false},
		{"refreshed token refused too", true, "none", 0, 2, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests++
				body, _ := io.ReadAll(r.Body)
				if string(body) != `{"q":1}` {
					t.Errorf("request %d body %q: not replayed", requests, body)
				}
				if r.Header.Get("Authorization") != "Bearer "+tc.accept {
					w.WriteHeader(http.StatusUnauthorized)
				}
			}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"q":1}`))
			refreshes := 0
			resp, err := vault.RoundTrip(http.DefaultTransport, req, refreshing(tc.refreshable, &refreshes))
			var expired *vault.ExpiredError
			switch {
			case tc.wantExpired:
				if !errors.As(err, &expired) || !strings.HasPrefix(err.Error(), "credential_expired:") || !strings.Contains(err.Error(), "vault acme") {
					t.Fatalf("err = %v, want credential_expired naming the vault", err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				resp.Body.Close()
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
				}
			}
			if requests != tc.wantRequests || refreshes != tc.wantRefreshes {
				t.Fatalf("%d requests, %d refreshes; want %d, %d", requests, refreshes, tc.wantRequests, tc.wantRefreshes)
			}
		})
	}
}

// An attach that cannot attach (a credential needing reconnection) stops
// the request before it is sent, with its error.
func TestRoundTripAttachErrorStopsTheRequest(t *testing.T) {
	sent := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent = true }))
	defer srv.Close()
	want := &vault.ExpiredError{Vault: "v", Prefix: srv.URL}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err := vault.RoundTrip(http.DefaultTransport, req, func(r *http.Request) { vault.AttemptOf(r).Err = want })
	if !errors.Is(err, want) || sent {
		t.Fatalf("err = %v, sent = %v", err, sent)
	}
}
