package web_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
	"github.com/subako/subako/web"
)

// The issue 11 benchmarks over HTTP: the whole server (web.New over a real
// database) behind a real listener, reached by the official Go SDK client,
// against a baseline reached by the same client in the same benchmark. The
// two sides alternate in short rounds, so drift on a shared machine falls on
// both, and the ratio is reported with b.ReportMetric.

const benchMCPToken = "bench-mcp-token-0123456789"

const benchSkillText = "Refunds within 30 days of purchase, with the receipt."

// mcpBench is a served Subako with a published version granting
// server-everything (echo allowed, credential in a vault) and a skill.
type mcpBench struct {
	rt      *runtime.Runtime
	srv     *httptest.Server
	owner   runtime.Principal
	version string
	vault   string
	mcpURL  string
}

func newMCPBench(b *testing.B) *mcpBench {
	b.Helper()
	ctx := b.Context()
	rt := runtime.New(modelstest.Open(b), runtime.Options{Log: quiet, AllowPrivateEgress: true})
	b.Cleanup(rt.Close)
	m := &mcpBench{rt: rt, mcpURL: mcptest.StartEverything(b, benchMCPToken)}
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	_, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", password)
	must(err)
	m.owner, err = rt.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	v, err := rt.VaultCreate(ctx, m.owner, runtime.VaultInput{Name: "bench"})
	must(err)
	m.vault = v.ID
	_, err = rt.CredentialSet(ctx, m.owner, runtime.CredentialInput{Vault: v.ID, Prefix: m.mcpURL, Type: "bearer", Secret: benchMCPToken})
	must(err)
	_, err = rt.SkillCreate(ctx, m.owner, runtime.SkillInput{Name: "policy", Files: []runtime.SkillFileInput{{Path: "refunds.md", Content: benchSkillText}}})
	must(err)
	name := "bench"
	a, err := rt.AgentCreate(ctx, m.owner, runtime.AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{
		"mcp_servers": []any{map[string]any{"name": "everything", "url": m.mcpURL, "default_policy": "ask",
			"tool_rules": map[string]string{"echo": "allow"}}},
		"skills": []any{map[string]any{"name": "policy", "skill": "policy"}},
	})
	ver, err := rt.VersionCreate(ctx, m.owner, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = rt.VersionPublish(ctx, m.owner, ver.ID)
	must(err)
	m.version = ver.ID
	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: m.srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	b.Cleanup(m.srv.Close)
	return m
}

// connect opens an SDK client session on an endpoint with a bearer token.
// Each client has its own connections, as separate agents would.
func connect(b *testing.B, endpoint, token string) *mcp.ClientSession {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{token, tr}}}, nil)
	if err != nil {
		b.Fatalf("connect to %s: %v", endpoint, err)
	}
	b.Cleanup(func() { cs.Close(); tr.CloseIdleConnections() })
	return cs
}

// sessionClient starts a Subako session with the vault and connects to its
// MCP endpoint with the session's token.
func (m *mcpBench) sessionClient(b *testing.B) *mcp.ClientSession {
	b.Helper()
	s, err := m.rt.SessionCreate(b.Context(), m.owner, runtime.SessionCreateInput{Version: m.version, Vaults: []string{m.vault}})
	if err != nil {
		b.Fatal(err)
	}
	return connect(b, m.srv.URL+"/mcp/sessions/"+s.ID, s.Token)
}

// side is one of the two things compared: its clients and the call each
// makes (or, for an in-process side, calls: one function a client).
type side struct {
	name    string // in the metrics' names; "subako" or "base" when empty
	clients []*mcp.ClientSession
	params  *mcp.CallToolParams
	want    string
	inProc  []func() error
	elapsed time.Duration
	calls   int
}

func (s *side) callers() []func() error {
	if s.inProc != nil {
		return s.inProc
	}
	out := make([]func() error, len(s.clients))
	for i, cs := range s.clients {
		out[i] = func() error {
			res, err := cs.CallTool(context.Background(), s.params)
			if err == nil && (res.IsError || resultText(res) != s.want) {
				err = fmt.Errorf("%s answered %q (error %v)", s.params.Name, resultText(res), res.IsError)
			}
			return err
		}
	}
	s.inProc = out
	return out
}

// round makes per calls on each client at once and adds the wall time.
func (s *side) round(b *testing.B, per int) {
	var wg sync.WaitGroup
	callers := s.callers()
	errs := make(chan error, len(callers))
	start := time.Now()
	for _, call := range callers {
		wg.Go(func() {
			for range per {
				if err := call(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	s.elapsed += time.Since(start)
	s.calls += per * len(callers)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// compare runs b.N calls a client on each side, alternating rounds of a few
// calls, and reports both sides' calls a second and time a call, and the
// ratio of the first side's time to the second's (Subako's to the
// baseline's, unless the sides are named otherwise).
func compare(b *testing.B, subako, base *side) {
	b.Helper()
	subako.round(b, 2) // warm: the first call discovers tools and opens pooled sessions
	base.round(b, 2)
	subako.elapsed, subako.calls, base.elapsed, base.calls = 0, 0, 0, 0
	const per = 5
	b.ResetTimer()
	for done := 0; done < b.N; done += per {
		subako.round(b, per)
		base.round(b, per)
	}
	b.StopTimer()
	for s, name := range map[*side]string{subako: "subako", base: "base"} {
		name = cmp.Or(s.name, name)
		b.ReportMetric(float64(s.calls)/s.elapsed.Seconds(), name+"_calls/s")
		b.ReportMetric(float64(s.elapsed.Microseconds())/float64(s.calls)*float64(len(s.callers())), name+"_us/call")
	}
	b.ReportMetric(subako.elapsed.Seconds()/base.elapsed.Seconds(), "ratio")
	b.ReportMetric(0, "ns/op") // the figures above are the ones that mean something
}

// BenchmarkMCPEndpointEcho: server-everything's echo through a session's MCP
// endpoint (policy allow, the vault's bearer credential attached, recorded)
// against the same call on a direct SDK session to the same server, with 1
// and 4 clients at once (each its own session). ratio is Subako's time over
// the direct call's; goal ≤ 1.25 on SQLite, ≤ 1.5 on PostgreSQL.
func BenchmarkMCPEndpointEcho(b *testing.B) {
	m := newMCPBench(b)
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			subako := &side{params: &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": "hi"}}, want: "Echo: hi"}
			base := &side{params: &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}, want: "Echo: hi"}
			for range n {
				subako.clients = append(subako.clients, m.sessionClient(b))
				base.clients = append(base.clients, connect(b, m.mcpURL, benchMCPToken))
			}
			compare(b, subako, base)
		})
	}
}

// BenchmarkMCPEndpointEchoFloor measures what the endpoint's goal is up
// against: a forwarder that only forwards (a bare Go SDK server whose echo
// calls the same upstream through a Go SDK client session of its own, one
// per client as Subako's pool keeps one per session; no bearer check, no
// policy, no record, no credential lookup). forwarder_vs_direct is the
// forwarder against the direct call (the floor of any proxy built on the
// SDK); subako_vs_forwarder is a session's endpoint against the forwarder,
// what governing adds above forwarding. Each sub-benchmark alternates its
// two sides like the others.
func BenchmarkMCPEndpointEchoFloor(b *testing.B) {
	m := newMCPBench(b)
	echo := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	}
	forwarders := http.NewServeMux()
	fwdSrv := httptest.NewServer(forwarders)
	b.Cleanup(fwdSrv.Close)
	nextForwarder := 0
	// forwarder serves a new forwarder with its own upstream session and
	// connects a client to it.
	forwarder := func(b *testing.B) *mcp.ClientSession {
		up := connect(b, m.mcpURL, benchMCPToken)
		srv := mcp.NewServer(&mcp.Implementation{Name: "forwarder", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
			})
		nextForwarder++
		path := fmt.Sprintf("/forwarder/%d", nextForwarder)
		forwarders.Handle(path, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		return connect(b, fwdSrv.URL+path, "unused")
	}
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("forwarder_vs_direct/clients=%d", n), func(b *testing.B) {
			fwd := &side{name: "forwarder", params: echo(), want: "Echo: hi"}
			direct := &side{name: "direct", params: echo(), want: "Echo: hi"}
			for range n {
				fwd.clients = append(fwd.clients, forwarder(b))
				direct.clients = append(direct.clients, connect(b, m.mcpURL, benchMCPToken))
			}
			compare(b, fwd, direct)
		})
		b.Run(fmt.Sprintf("subako_vs_forwarder/clients=%d", n), func(b *testing.B) {
			subako := &side{params: &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": "hi"}}, want: "Echo: hi"}
			fwd := &side{name: "forwarder", params: echo(), want: "Echo: hi"}
			for range n {
				subako.clients = append(subako.clients, m.sessionClient(b))
				fwd.clients = append(fwd.clients, forwarder(b))
			}
			compare(b, subako, fwd)
		})
	}
}

// BenchmarkMCPEndpointSkillRead: 8 clients reading a skill's file through
// their sessions' MCP endpoints against 8 clients of a bare Go SDK server
// whose tool reads the same file from disk. ratio is Subako's time over the
// bare server's (calls a second: its inverse); goal ≤ 2 (≥ 0.5× the calls).
func BenchmarkMCPEndpointSkillRead(b *testing.B) {
	m := newMCPBench(b)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "refunds.md"), []byte(benchSkillText), 0o600); err != nil {
		b.Fatal(err)
	}
	type readIn struct {
		Path string `json:"path"`
	}
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(bare, &mcp.Tool{Name: "read", Description: "Reads a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, any, error) {
			body, err := os.ReadFile(filepath.Join(dir, filepath.Base(in.Path)))
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}, nil, nil
		})
	bareSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bare }, nil))
	b.Cleanup(bareSrv.Close)

	const n = 8
	subako := &side{params: &mcp.CallToolParams{Name: "skill__policy__read", Arguments: map[string]any{"path": "refunds.md"}}}
	base := &side{params: &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "refunds.md"}}, want: benchSkillText}
	for range n {
		subako.clients = append(subako.clients, m.sessionClient(b))
		base.clients = append(base.clients, connect(b, bareSrv.URL, "unused"))
	}
	// What a skill read answers is the runtime's JSON: take it from a first call.
	res, err := subako.clients[0].CallTool(b.Context(), subako.params)
	if err != nil || res.IsError {
		b.Fatalf("skill read: %v %+v", err, res)
	}
	subako.want = resultText(res)
	compare(b, subako, base)
}

// BenchmarkMCPEndpointOverhead isolates the endpoint: the same allowed echo
// through a session's MCP endpoint (HTTP, bearer check, SDK server) against
// ToolCall.create called in process on the same session. ratio is what the
// endpoint layer multiplies a governed call by.
func BenchmarkMCPEndpointOverhead(b *testing.B) {
	m := newMCPBench(b)
	s, err := m.rt.SessionCreate(b.Context(), m.owner, runtime.SessionCreateInput{Version: m.version, Vaults: []string{m.vault}})
	if err != nil {
		b.Fatal(err)
	}
	endpoint := &side{clients: []*mcp.ClientSession{connect(b, m.srv.URL+"/mcp/sessions/"+s.ID, s.Token)},
		params: &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": "hi"}}, want: "Echo: hi"}
	p := runtime.SessionPrincipal(s.ID, "")
	wait := 10.0
	inProcess := &side{inProc: []func() error{func() error {
		c, err := m.rt.ToolCallCreate(context.Background(), p, runtime.ToolCallInput{Session: s.ID, Tool: "mcp__everything__echo",
			Input: json.RawMessage(`{"message":"hi"}`), WaitSeconds: &wait})
		if err == nil && c.Status != runtime.CallSucceeded {
			err = fmt.Errorf("in process: %+v", c)
		}
		return err
	}}}
	compare(b, endpoint, inProcess)
}
