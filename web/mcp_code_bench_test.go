package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// BenchmarkCodeModeCall: what a $ call inside a /mcp `do` program costs
// beside the same verb (Agent.get) called over HTTP with the same token, in
// the same iteration (so drift on a shared machine falls on both). Each
// iteration runs one program of 100 $ calls, 100 HTTP calls, and one empty
// program (the fixed cost of a do: MCP round trip, esbuild, a fresh
// instance, the Program.run Action).
func BenchmarkCodeModeCall(b *testing.B) {
	m := newMCPBench(b)
	ctx := b.Context()
	tok, err := m.rt.TokenCreate(ctx, m.owner, runtime.TokenCreateInput{Name: "bench", Expires: "1h"})
	if err != nil {
		b.Fatal(err)
	}
	name := "bench-target"
	a, err := m.rt.AgentCreate(ctx, m.owner, runtime.AgentInput{Name: &name})
	if err != nil {
		b.Fatal(err)
	}
	cs := connect(b, m.srv.URL+"/mcp", tok.Token)
	const calls = 100
	loop := fmt.Sprintf("for (let i = 0; i < %d; i++) await $.Agent.get({ agent: %q }); return 1", calls, a.ID)
	do := func(program string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "do", Arguments: map[string]any{"program": program}})
		if err != nil || res.IsError {
			b.Fatalf("do: %v %+v", err, res)
		}
	}
	hc := &http.Client{}
	get := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.srv.URL+"/api/v1/agents/"+a.ID, nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("Agent.get: %d %s", resp.StatusCode, body)
		}
		var out map[string]any
		_ = json.Unmarshal(body, &out)
	}
	var inDo, overHTTP, empty time.Duration
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		do(loop)
		inDo += time.Since(t)
		t = time.Now()
		for range calls {
			get()
		}
		overHTTP += time.Since(t)
		t = time.Now()
		do("return 1")
		empty += time.Since(t)
	}
	n := float64(b.N) * calls
	b.ReportMetric(float64(inDo-empty)/n, "ns/$call")
	b.ReportMetric(float64(overHTTP)/n, "ns/http-call")
	b.ReportMetric(float64(inDo-empty)/float64(overHTTP), "$call/http")
	b.ReportMetric(float64(empty)/float64(b.N), "ns/empty-do")
}
