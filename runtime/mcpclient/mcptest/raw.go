package mcptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// StartRaw serves MCP by answering JSON-RPC itself, for what the Go SDK's
// server will not send (a name listed twice, a schema that refers to
// itself, a huge error message): answer gives the "result":… or "error":…
// member of the answer to each request; initialize is answered for it. It
// returns the endpoint URL.
func StartRaw(t testing.TB, answer func(method string) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		out := `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		if req.Method != "initialize" {
			out = answer(req.Method)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, req.ID, out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
