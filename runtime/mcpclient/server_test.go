package mcpclient_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// recorder is an in-process Go SDK server that notes what a test needs to
// see from the server's side: handshakes, and the credential on each
// tools/call. restart swaps in a fresh handler that knows no sessions, as a
// restarted server would.
type recorder struct {
	url     string
	tools   []mcptest.Tool
	handler atomic.Pointer[http.Handler]

	mu    sync.Mutex
	inits int
	auths []string // Authorization of each tools/call
}

func startRecorder(t *testing.T, tools ...mcptest.Tool) *recorder {
	t.Helper()
	r := &recorder{tools: tools}
	r.restart()
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/mcp"
	return r
}

func (r *recorder) restart() {
	server := mcptest.NewServer(r.tools...)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	r.handler.Store(&h)
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	r.mu.Lock()
	switch msg.Method {
	case "initialize":
		r.inits++
	case "tools/call":
		r.auths = append(r.auths, req.Header.Get("Authorization"))
	}
	r.mu.Unlock()
	(*r.handler.Load()).ServeHTTP(w, req)
}

func (r *recorder) handshakes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inits
}

func (r *recorder) callAuths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}
