package runtime_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

const benchToken = "bench-token-0123456789"

// benchSession is a published version granting server-everything (echo
// allowed) and a skill, and a session of it with the server's credential.
func benchSession(b testing.TB) (*runtime.Runtime, runtime.Principal, string, string) {
	ctx := b.Context()
	rt := runtime.New(modelstest.Open(b), runtime.Options{AllowPrivateEgress: true}) // server-everything is on 127.0.0.1
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

func benchCall(b *testing.B, rt *runtime.Runtime, p runtime.Principal, session, tool, input string) {
	wait := 10.0
	for b.Loop() {
		c, err := rt.ToolCallCreate(b.Context(), p, runtime.ToolCallInput{Session: session, Tool: tool, Input: json.RawMessage(input), WaitSeconds: &wait})
		if err != nil || c.Status != runtime.CallSucceeded {
			b.Fatalf("%s: %v %+v", tool, err, c)
		}
	}
}

// BenchmarkDispatch compares an allowed MCP echo through Subako (policy,
// records, credential attached, pooled MCP session) with the same call made
// directly on an open SDK session, and times a skill read.
func BenchmarkDispatch(b *testing.B) {
	rt, p, session, url := benchSession(b)
	b.Run("subako_mcp_echo", func(b *testing.B) {
		benchCall(b, rt, p, session, "mcp__everything__echo", `{"message":"hi"}`)
	})
	b.Run("direct_mcp_echo", func(b *testing.B) {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: bearerRT{benchToken}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for b.Loop() {
			if _, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("subako_skill_read", func(b *testing.B) {
		benchCall(b, rt, p, session, "skill__policy__read", `{"path":"refunds.md"}`)
	})
}

type bearerRT struct{ token string }

func (t bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return http.DefaultTransport.RoundTrip(r)
}
