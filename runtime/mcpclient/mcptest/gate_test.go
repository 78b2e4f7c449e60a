package mcptest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGate(t *testing.T) {
	var forwarded http.Header
	gate := Gate("tok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded = r.Header.Clone()
	}))
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"right token", "Bearer tok", http.StatusOK},
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"token without scheme", "tok", http.StatusUnauthorized},
		{"basic auth", "Basic dG9rOg==", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forwarded = nil
			req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			gate.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d", rec.Code, tc.want)
			}
			if tc.want != http.StatusOK && forwarded != nil {
				t.Fatal("a refused request reached the server")
			}
			if tc.want == http.StatusOK && forwarded.Get("Authorization") != "" {
				t.Fatal("the gate passed the token on to the server")
			}
		})
	}
}
