package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StartFlood is a hostile server: a Go SDK server offering tools and a tool
// named flood, except that a call of flood is answered with size bytes of
// text, streamed as JSON (or, with sse, as one SSE event) without the
// server holding them. sent counts what it wrote before the client hung up.
// It has no gate: the caller attaches nothing.
func StartFlood(t testing.TB, sse bool, size int64, tools ...Tool) (url string, sent *atomic.Int64) {
	t.Helper()
	server := NewServer(append(tools, Named("flood"))...)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	sent = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ Name string }
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || msg.Params.Name != "flood" {
			sdk.ServeHTTP(w, r)
			return
		}
		prefix := `{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"`
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			prefix = "event: message\ndata: " + prefix
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = w.Write([]byte(prefix))
		chunk := bytes.Repeat([]byte("A"), 64<<10)
		for n := int64(0); n < size; n += int64(len(chunk)) {
			if _, err := w.Write(chunk); err != nil {
				return // the client hung up
			}
			sent.Add(int64(len(chunk)))
		}
		_, _ = w.Write([]byte(`"}]}}` + "\n\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", sent
}
