// Package mcptest starts MCP servers for tests: the reference
// server-everything (Node) and small in-process Go SDK servers, each behind
// a gate that demands a bearer token, so credential handling is tested
// against a server that really refuses.
//
// It is imported by tests only, and must never be used by the runtime: the
// servers it starts listen on 127.0.0.1 and live as long as one test.
package mcptest

import (
	"crypto/subtle"
	"net/http"
)

// Gate passes requests carrying "Authorization: Bearer <token>" on to next,
// without that header, and answers 401 to every other request.
func Gate(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcptest"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}
