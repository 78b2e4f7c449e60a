package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// publishedSession makes an owner, an agent whose published version has the
// given config, and a session of it.
func publishedSession(t *testing.T, rt *runtime.Runtime, config string) (owner runtime.Principal, session string) {
	t.Helper()
	ctx := t.Context()
	if _, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	owner, _ = rt.PrincipalForEmail(ctx, "owner@example.com")
	name := "agent"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	v, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: json.RawMessage(config)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.VersionPublish(ctx, owner, v.ID); err != nil {
		t.Fatal(err)
	}
	s, err := rt.SessionCreate(ctx, owner, runtime.SessionCreateInput{Version: v.ID})
	if err != nil {
		t.Fatal(err)
	}
	return owner, s.ID
}

// A question no client ever answers ends as a failed call saying it timed out.
func TestClientThatNeverAnswersTimesOut(t *testing.T) {
	rt := runtime.New(modelstest.Open(t), runtime.Options{ClientTimeout: 100 * time.Millisecond})
	t.Cleanup(rt.Close)
	_, session := publishedSession(t, rt, `{"builtins": [{"name": "ask_user"}]}`)
	agent := runtime.SessionPrincipal(session, "")
	wait := 0.0
	c, err := rt.ToolCallCreate(t.Context(), agent, runtime.ToolCallInput{Session: session, Tool: "builtin__ask_user__ask",
		Input: json.RawMessage(`{"question": "Refund in full?"}`), WaitSeconds: &wait})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Status != runtime.CallFailed && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		rt.Reap(t.Context())
		if c, err = rt.ToolCallGet(t.Context(), agent, c.ID); err != nil {
			t.Fatal(err)
		}
	}
	if c.Status != runtime.CallFailed || !strings.Contains(c.Error, "no client answered within 100ms") {
		t.Fatalf("an unanswered question: %+v", c)
	}
}

// An MCP server the egress guard refuses shows in the version's tools with
// the reason and the way to allow it, not only as "not discovered".
func TestRefusedDiscoveryIsExplained(t *testing.T) {
	rt := runtime.New(modelstest.Open(t), runtime.Options{})
	t.Cleanup(rt.Close)
	owner, session := publishedSession(t, rt, `{"mcp_servers": [{"name": "local", "url": "http://127.0.0.1:9/mcp", "default_policy": "allow"}]}`)
	offered, err := rt.SessionTools(t.Context(), runtime.SessionPrincipal(session, ""), session, false)
	if err != nil || len(offered) != 0 {
		t.Fatalf("a refused server's tools were offered: %+v %v", offered, err)
	}
	s, _ := rt.SessionGet(t.Context(), owner, session)
	tools, err := rt.VersionTools(t.Context(), owner, s.Version)
	if err != nil || len(tools) != 1 || tools[0].Discovered || !strings.Contains(tools[0].Description, "--egress-allow-private") {
		t.Fatalf("the editor's row for the refused server: %+v %v", tools, err)
	}
}
