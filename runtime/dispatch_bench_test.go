package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

const benchToken = "bench-token-0123456789"

// benchSession is a published version granting server-everything (echo
// allowed) and a skill, and a session of it with the server's credential.
func benchSession(b testing.TB) (*runtime.Runtime, runtime.Principal, string, string) {
	return benchSessionOn(b, modelstest.Open(b))
}

// benchSessionOn is benchSession over a database the test opened.
func benchSessionOn(b testing.TB, db *models.DB) (*runtime.Runtime, runtime.Principal, string, string) {
	ctx := b.Context()
	rt := runtime.New(db, runtime.Options{AllowPrivateEgress: true}) // server-everything is on 127.0.0.1
	b.Cleanup(rt.Close)
	url := mcptest.StartEverything(b, benchToken)
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	_, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery")
	must(err)
	owner, err := rt.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	v, err := rt.VaultCreate(ctx, owner, runtime.VaultInput{Name: "bench"})
	must(err)
	_, err = rt.CredentialSet(ctx, owner, runtime.CredentialInput{Vault: v.ID, Prefix: url, Type: "bearer", Secret: benchToken})
	must(err)
	_, err = rt.SkillCreate(ctx, owner, runtime.SkillInput{Name: "policy", Files: []runtime.SkillFileInput{{Path: "refunds.md", Content: "Refunds within 30 days."}}})
	must(err)
	name := "bench"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{
		"mcp_servers": []any{map[string]any{"name": "everything", "url": url, "default_policy": "allow"}},
		"skills":      []any{map[string]any{"name": "policy", "skill": "policy"}},
	})
	ver, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = rt.VersionPublish(ctx, owner, ver.ID)
	must(err)
	s, err := rt.SessionCreate(ctx, owner, runtime.SessionCreateInput{Version: ver.ID, Vaults: []string{v.ID}})
	must(err)
	return rt, runtime.SessionPrincipal(s.ID, ""), s.ID, url
}

func benchCall(b testing.TB, rt *runtime.Runtime, p runtime.Principal, session, tool, input string) {
	wait := 10.0
	c, err := rt.ToolCallCreate(b.Context(), p, runtime.ToolCallInput{Session: session, Tool: tool, Input: json.RawMessage(input), WaitSeconds: &wait})
	if err != nil || c.Status != runtime.CallSucceeded {
		b.Fatalf("%s: %v %+v", tool, err, c)
	}
}

// alternate runs, b.N times, a round of clients concurrent calls through
// Subako, then a round of the same calls on the baseline (the order flips
// every round), and reports each side's time per round and their ratio:
// both sides see the same machine at the same moment.
func alternate(b *testing.B, clients int, subako, baseline func()) {
	round := func(f func()) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(f)
		}
		wg.Wait()
		return time.Since(start)
	}
	subako()
	baseline() // warm both: the first call of a session builds what later ones reuse
	var ts, tb time.Duration
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			ts += round(subako)
			tb += round(baseline)
		} else {
			tb += round(baseline)
			ts += round(subako)
		}
		i++
	}
	b.ReportMetric(float64(ts.Nanoseconds())/float64(i), "subako-ns/round")
	b.ReportMetric(float64(tb.Nanoseconds())/float64(i), "baseline-ns/round")
	b.ReportMetric(float64(ts)/float64(tb), "ratio")
}

// BenchmarkDispatch compares, alternating in one benchmark, an allowed MCP
// echo through Subako (session, tools, policy, call and Action recorded,
// credential attached, pooled MCP session, result recorded) with the same
// call on an open SDK session; and a skill read through Subako with a bare
// Go SDK server over HTTP answering the same read. With 1 and 4 clients;
// SUBAKO_TEST_DATABASE_URL runs it on PostgreSQL.
func BenchmarkDispatch(b *testing.B) {
	rt, p, session, url := benchSession(b)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerRT{benchToken}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	directEcho := func() {
		if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
			b.Error(err)
		}
	}
	bare := bareSkillServer(b)
	bareRead := func() {
		if _, err := bare.CallTool(b.Context(), &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "refunds.md"}}); err != nil {
			b.Error(err)
		}
	}
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("mcp_echo/clients=%d", clients), func(b *testing.B) {
			alternate(b, clients, func() { benchCall(b, rt, p, session, "mcp__everything__echo", `{"message":"hi"}`) }, directEcho)
		})
		b.Run(fmt.Sprintf("skill_read/clients=%d", clients), func(b *testing.B) {
			alternate(b, clients, func() { benchCall(b, rt, p, session, "skill__policy__read", `{"path":"refunds.md"}`) }, bareRead)
		})
	}
}

// bareSkillServer is a Go SDK server over streamable HTTP with one tool
// that answers the skill's file, and a client session on it.
func bareSkillServer(b *testing.B) *mcp.ClientSession {
	files := map[string]string{"refunds.md": "Refunds within 30 days."}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	type in struct {
		Path string `json:"path"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "read"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: files[a.Path]}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

type bearerRT struct{ token string }

func (t bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return http.DefaultTransport.RoundTrip(r)
}
