package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// A draining replica (SIGTERM) answers /readyz 503 so the proxy stops
// sending it requests; /internal/ answers 404 on a server without a
// shared secret, whatever the token.
func TestDrainingReplicaIsNotReadyAndInternalIsClosedWithoutSecret(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	if resp, _ := b.get("/readyz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz before draining: %d", resp.StatusCode)
	}
	for _, auth := range []string{"", "Bearer anything-at-all-0123456789"} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/internal/v1/exec", strings.NewReader(`{}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/internal/v1/exec without a configured secret (auth %q) answered %d, want 404", auth, resp.StatusCode)
		}
	}
	e.rt.SetDraining()
	resp, body := b.get("/readyz")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("readyz while draining: %d %q, want 503 saying it drains", resp.StatusCode, body)
	}
	if resp, _ := b.get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz while draining: %d, want 200 (the process runs)", resp.StatusCode)
	}
}
