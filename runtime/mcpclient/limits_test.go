package mcpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// TestAnAnswerPastTheLimitFailsWithBoundedMemory streams a 400 MB answer to
// a tools/call: the call fails naming the limit, the heap stays within a
// few times the limit instead of growing by the answer, the server is hung
// up on, and the next call (on a fresh session) works.
func TestAnAnswerPastTheLimitFailsWithBoundedMemory(t *testing.T) {
	for _, mode := range []string{"json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			url, sent := mcptest.StartFlood(t, mode == "sse", 400<<20, mcptest.Echo())
			p := newPool(t, mcpclient.Options{})
			peak := watchHeap(t)
			_, err := p.Call(context.Background(), url, "s", nil, "flood", nil)
			used := peak()
			if !errors.Is(err, mcpclient.ErrTooLarge) ||
				!strings.Contains(err.Error(), "larger than 4194304 bytes (4 MiB)") || !strings.Contains(err.Error(), "--mcp-max-response-bytes") {
				t.Fatalf("Call = %v, want ErrTooLarge naming the 4 MiB limit and its flag", err)
			}
			const bound = 64 << 20 // generous: 16 times the limit, a sixth of the answer
			if used > bound {
				t.Fatalf("heap in use peaked %d MiB above its start while a 400 MB answer streamed; want under %d MiB", used>>20, bound>>20)
			}
			if n := sent.Load(); n > 100<<20 {
				t.Fatalf("the server wrote %d MiB before the client hung up; want it cut near the limit", n>>20)
			}
			res, err := p.Call(context.Background(), url, "s", nil, "echo", echoArgs)
			if err != nil || res.Text != "Echo: hi" {
				t.Fatalf("next call: %+v, %v", res, err)
			}
			t.Logf("heap peak above start: %d MiB; server wrote %d MiB", used>>20, sent.Load()>>20)
		})
	}
}

// startServer serves tools from a Go SDK server with pages of pageSize.
func startServer(t *testing.T, pageSize int, tools ...*mcp.Tool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
	for _, tool := range tools {
		server.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool.Name}}}, nil
		})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func tool(name string, descBytes, schemaBytes int) *mcp.Tool {
	schema := map[string]any{"type": "object"}
	if schemaBytes > 0 {
		schema["description"] = strings.Repeat("s", schemaBytes)
	}
	return &mcp.Tool{Name: name, Description: strings.Repeat("d", descBytes), InputSchema: schema}
}

func TestDiscoveryKeepsWithinItsLimits(t *testing.T) {
	many := func(n, desc int) []*mcp.Tool {
		var out []*mcp.Tool
		for i := range n {
			out = append(out, tool(fmt.Sprintf("t%04d", i), desc, 0))
		}
		return out
	}
	tests := []struct {
		name     string
		limits   mcpclient.Limits
		pageSize int
		tools    []*mcp.Tool
		kept     int
		skipped  map[string]string // tool → words of its reason
		unlisted int
		more     bool // pages were left unread once the list was full
	}{
		// Ten pages of 500: the list is full after two, and the eight
		// others are never read (unlisted would be 4,000 if they were).
		{"5,000 tools of 2 KB descriptions", mcpclient.Limits{}, 500, many(5000, 2000), 1000, nil, 0, true},
		{"description and schema sizes", mcpclient.Limits{}, 10,
			[]*mcp.Tool{tool("fine", 100, 100), tool("wordy", 9000, 0), tool("schema", 10, 70_000), tool("edge", 8192, 0), tool(strings.Repeat("n", 200), 10, 0)}, 2,
			map[string]string{"wordy": "description is 9000 bytes; the limit is 8 KiB (--mcp-max-description-bytes)",
				"schema":                       "input schema is 70034 bytes; the limit is 64 KiB (--mcp-max-schema-bytes)",
				strings.Repeat("n", 128) + "…": "its name is 200 bytes; MCP tool names are 1 to 128 characters"}, 0, false},
		{"a lower count", mcpclient.Limits{MaxTools: 3}, 2, many(5, 10), 3, nil, 1, true},
		{"a count filled on the last page", mcpclient.Limits{MaxTools: 3}, 2, many(4, 10), 3, nil, 1, false},
		{"a list filling its bytes", mcpclient.Limits{MaxResponseBytes: 3000}, 2, many(6, 900), 3,
			map[string]string{"t0003": "already fill the 3000 bytes", "t0004": "already fill", "t0005": "already fill"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := startServer(t, tt.pageSize, tt.tools...)
			p := newPool(t, mcpclient.Options{Limits: tt.limits})
			d, err := p.Discover(context.Background(), url, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Tools) != tt.kept || len(d.Skipped) != len(tt.skipped) || d.Unlisted != tt.unlisted || d.More != tt.more {
				t.Fatalf("kept %d, skipped %+v, unlisted %d, more %v; want %d, %d, %d, %v",
					len(d.Tools), d.Skipped, d.Unlisted, d.More, tt.kept, len(tt.skipped), tt.unlisted, tt.more)
			}
			for _, s := range d.Skipped {
				if !strings.Contains(s.Reason, tt.skipped[s.Name]) || tt.skipped[s.Name] == "" {
					t.Fatalf("skipped %q because %q; want a reason saying %q", s.Name, s.Reason, tt.skipped[s.Name])
				}
			}
		})
	}
}

// watchHeap samples the heap in use until the returned function is called,
// which gives the peak above the heap at the start.
func watchHeap(t *testing.T) (peak func() uint64) {
	t.Helper()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var top uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			top = max(top, ms.HeapInuse)
			select {
			case <-stop:
				done <- top - min(top, base)
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// TestDiscoverySkipsANameListedTwice serves a tools/list that names "ok"
// twice (the Go SDK's server cannot): the first is kept, the second
// skipped with the reason, so the session never offers a model two tools
// of one name (model APIs refuse the whole list then). "OK" is another name
// and is kept.
func TestDiscoverySkipsANameListedTwice(t *testing.T) {
	url := mcptest.StartRaw(t, func(string) string {
		return `"result":{"tools":[{"name":"ok","description":"first","inputSchema":{"type":"object"}},` +
			`{"name":"ok","description":"second","inputSchema":{"type":"object"}},` +
			`{"name":"OK","description":"other","inputSchema":{"type":"object"}}]}`
	})
	p := newPool(t, mcpclient.Options{})
	d, err := p.Discover(context.Background(), url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, tool := range d.Tools {
		kept = append(kept, tool.Name+"="+tool.Description)
	}
	if strings.Join(kept, ",") != "ok=first,OK=other" {
		t.Fatalf("kept %v; want ok (the first) and OK", kept)
	}
	if len(d.Skipped) != 1 || d.Skipped[0].Name != "ok" || !strings.Contains(d.Skipped[0].Reason, "more than once") {
		t.Fatalf("skipped %+v; want the second ok, saying it is listed more than once", d.Skipped)
	}
}

// TestAServersErrorMessageIsCut has a server answer tools/list and
// tools/call with a 3 MB error message: the error keeps its start and
// code, not 3 MB that would go into the log line, the stored call and the
// session page each time.
func TestAServersErrorMessageIsCut(t *testing.T) {
	url := mcptest.StartRaw(t, func(string) string {
		return `"error":{"code":-32000,"message":"boom ` + strings.Repeat("E", 3<<20) + `"}`
	})
	p := newPool(t, mcpclient.Options{})
	_, derr := p.Discover(context.Background(), url, "", nil)
	_, cerr := p.Call(context.Background(), url, "", nil, "any", nil)
	for _, err := range []error{derr, cerr} {
		if !errors.Is(err, mcpclient.ErrServer) || !strings.Contains(err.Error(), "boom EEE") || !strings.Contains(err.Error(), "(code -32000)") {
			t.Fatalf("error = %.300v; want the server's error with its code", err)
		}
		if n := len(err.Error()); n > 4096 {
			t.Fatalf("the error is %d bytes; want the server's message cut", n)
		}
	}
}
