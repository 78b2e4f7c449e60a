package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// BenchmarkEcho compares an echo through Pool.Call (cached session) with the
// same call on a bare SDK session held open, against server-everything and
// against an in-process Go SDK server. Results: docs/benchmarks.md.
func BenchmarkEcho(b *testing.B) {
	servers := []struct {
		name  string
		start func(testing.TB, string) string
	}{
		{"everything", mcptest.StartEverything},
		{"go", func(t testing.TB, tok string) string { return mcptest.StartGoServer(t, tok, mcptest.Echo()) }},
	}
	for _, s := range servers {
		url := s.start(b, token)
		warmUp(b, url)
		b.Run(s.name+"/bare-sdk", func(b *testing.B) { benchBare(b, url) })
		b.Run(s.name+"/pool", func(b *testing.B) { benchPool(b, url) })
	}
}

// warmUp lets node's JIT settle, so the first variant measured is not
// charged for it.
func warmUp(b *testing.B, url string) {
	pool := mcpclient.NewPool(local)
	defer pool.Close()
	for range 500 {
		if _, err := pool.Call(context.Background(), url, "c", bearer(token), "echo", json.RawMessage(`{"message":"warm"}`)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPool(b *testing.B, url string) {
	pool := mcpclient.NewPool(local)
	defer pool.Close()
	args := json.RawMessage(`{"message":"bench"}`)
	ctx := context.Background()
	if _, err := pool.Call(ctx, url, "c", bearer(token), "echo", args); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := pool.Call(ctx, url, "c", bearer(token), "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

func benchBare(b *testing.B, url string) {
	ctx := context.Background()
	hc := &http.Client{Transport: attachRT{bearer(token)}}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}}
	for b.Loop() {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}

type attachRT struct{ attach func(*http.Request) }

func (a attachRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	a.attach(r)
	return http.DefaultTransport.RoundTrip(r)
}
