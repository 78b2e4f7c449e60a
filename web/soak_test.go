package web_test

import (
	"fmt"
	"net/http"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
	"github.com/subako/subako/runtime/sandbox/local"
)

// soakConfig grants one of everything a call can reach: an MCP server behind
// a vault credential, a skill, a sandbox and a function.
const soakConfig = `{
  "mcp_servers": [{"name": "everything", "url": "MCP_URL", "default_policy": "allow", "tool_rules": {"get-sum": "deny"}}],
  "skills": [{"name": "helper", "skill": "helper"}],
  "sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
    "network": {"type": "none"}, "default_policy": "allow"}],
  "functions": [{"name": "jq", "package": "jq", "version": "1.0.0", "default_policy": "allow"}],
  "builtins": [{"name": "session"}]
}`

// TestSoakMixedClients runs 20 clients of mixed calls against one server for
// SUBAKO_SOAK (a Go duration; skipped when unset) and then checks that every
// call answered as it should and that goroutines, open descriptors and heap
// came back near where they started: what a long-running server needs.
func TestSoakMixedClients(t *testing.T) {
	span, err := time.ParseDuration(os.Getenv("SUBAKO_SOAK"))
	if err != nil || span <= 0 {
		t.Skip("set SUBAKO_SOAK to a duration (for example 20s) to run the soak test")
	}
	span = min(span, 10*time.Minute)
	f := newFnEnv(t)
	f.logs.Limit = 1 << 20 // keep the captured log from counting as a leak
	f.install("jq")
	mcpURL := mcptest.StartEverything(t, mcpToken)
	var v struct{ ID string }
	if st := f.api(f.owner, "POST", "/vaults", map[string]any{"name": "soak"}, &v); st != 201 {
		t.Fatalf("Vault.create: %d", st)
	}
	if st := f.api(f.owner, "PUT", "/vaults/"+v.ID+"/credentials", map[string]any{"prefix": mcpURL, "type": "bearer", "secret": mcpToken}, nil); st != 200 {
		t.Fatalf("Credential.set: %d", st)
	}
	skill := map[string]any{"name": "helper", "description": "Notes", "files": []map[string]any{
		{"path": "notes.md", "content": strings.Repeat("a line of notes\n", 64)}}}
	if st := f.api(f.owner, "POST", "/skills", skill, nil); st != 201 {
		t.Fatalf("Skill.create: %d", st)
	}
	_, draft := f.agentWithDraft(f.owner)
	if st, body := f.rawAPI(f.owner, "PUT", "/versions/"+draft.ID+"/config", strings.ReplaceAll(soakConfig, "MCP_URL", mcpURL)); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := f.api(f.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	startSandboxes(t, f.rt, sandboxDirs(t), local.Config{})
	w := &world{env: f.env, owner: f.owner, version: draft.ID, vault: v.ID, mcpURL: mcpURL}

	// Warm every path once, so what it caches is in the baseline.
	warm := w.session(w.vault)
	for _, kind := range soakKinds {
		if err := kind.run(w, warm, nil, 0); err != nil {
			t.Fatalf("warm-up %s: %v", kind.name, err)
		}
	}
	before := measure(t, w.rt.DB())

	const clients = 20
	var calls, failed atomic.Int64
	var firstErr sync.Once
	deadline := time.Now().Add(span)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := w.session(w.vault)
			var cs *mcp.ClientSession
			defer func() {
				if cs != nil {
					cs.Close()
				}
				// Ending the session suspends its sandbox: what a finished agent leaves.
				start := time.Now()
				if st, body := w.rawAPI(w.owner, "POST", "/sessions/"+s.ID+"/end", ""); st != 200 {
					failed.Add(1)
					took := time.Since(start)
					firstErr.Do(func() {
						t.Errorf("client %d: Session.end: %d %s after %s\nthe server logged:\n%s", i, st, body, took, serverErrors(f.logs.String()))
					})
				}
			}()
			for n := 0; time.Now().Before(deadline); n++ {
				kind := soakKinds[(i+n)%len(soakKinds)]
				if kind.mcp && cs == nil {
					var err error
					if cs, err = connectMCP(w, s); err != nil {
						failed.Add(1)
						firstErr.Do(func() { t.Errorf("client %d: connect: %v", i, err) })
						return
					}
				}
				calls.Add(1)
				if err := kind.run(w, s, cs, n); err != nil {
					failed.Add(1)
					firstErr.Do(func() {
						t.Errorf("client %d, %s: %v\nthe server logged:\n%s", i, kind.name, err, serverErrors(f.logs.String()))
					})
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls by %d clients in %s, %d failed; %d events missed by subscribers behind (each told to re-read)",
		calls.Load(), clients, span, failed.Load(), w.rt.EventCounts().Missed)
	if calls.Load() < clients {
		t.Fatalf("only %d calls were made", calls.Load())
	}

	// Let idle keep-alive connections and finished streams close.
	http.DefaultClient.CloseIdleConnections()
	after := settle(t, w.rt.DB(), before)
	t.Logf("goroutines %d → %d, descriptors %d → %d, heap %d → %d MiB",
		before.goroutines, after.goroutines, before.fds, after.fds, before.heap>>20, after.heap>>20)
	if after.goroutines > before.goroutines+10 {
		t.Errorf("goroutines grew from %d to %d after the clients left:\n%s", before.goroutines, after.goroutines, stacks())
	}
	if after.fds > before.fds+10 {
		t.Errorf("open descriptors grew from %d to %d after the clients left (the database pools' idle connections not counted)", before.fds, after.fds)
	}
	if after.dbInUse > 0 {
		t.Errorf("%d database connections still in use 15 s after the clients left:\n%s", after.dbInUse, stacks())
	}
	if after.heap > 2*before.heap+32<<20 {
		t.Errorf("heap grew from %d to %d MiB after the clients left", before.heap>>20, after.heap>>20)
	}
}

// soakKind is one sort of call a soak client makes; each checks its answer.
type soakKind struct {
	name string
	mcp  bool
	run  func(w *world, s session, cs *mcp.ClientSession, n int) error
}

var soakKinds = []soakKind{
	{name: "MCP echo over the session endpoint", mcp: true, run: func(w *world, s session, cs *mcp.ClientSession, n int) error {
		if cs == nil {
			var err error
			if cs, err = connectMCP(w, s); err != nil {
				return err
			}
			defer cs.Close()
		}
		msg := fmt.Sprintf("soak %d", n)
		res, err := cs.CallTool(w.t.Context(), &mcp.CallToolParams{Name: "mcp__everything__echo", Arguments: map[string]any{"message": msg}})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "Echo: "+msg) {
			return fmt.Errorf("echo: %v %+v", err, res)
		}
		return nil
	}},
	{name: "skill read through the API", run: func(w *world, s session, _ *mcp.ClientSession, _ int) error {
		return apiCall(w, s, "skill__helper__read", map[string]any{"path": "notes.md"}, "succeeded", "a line of notes")
	}},
	{name: "denied tool through the API", run: func(w *world, s session, _ *mcp.ClientSession, _ int) error {
		return apiCall(w, s, "mcp__everything__get-sum", map[string]any{"a": 1, "b": 2}, "refused", "")
	}},
	{name: "jq function", run: func(w *world, s session, _ *mcp.ClientSession, n int) error {
		return apiCall(w, s, "fn__jq__query", map[string]any{"filter": ".n + 1", "input": map[string]any{"n": n}}, "succeeded", fmt.Sprint(n+1))
	}},
	{name: "sandbox exec", run: func(w *world, s session, _ *mcp.ClientSession, n int) error {
		return apiCall(w, s, execTool, map[string]any{"command": fmt.Sprintf("echo run-%d > /workspace/last; cat /workspace/last", n)}, "succeeded", fmt.Sprintf("run-%d", n))
	}},
	{name: "Session.tools", run: func(w *world, s session, _ *mcp.ClientSession, _ int) error {
		var ts []struct{ Name string }
		if st := w.api(s.Token, "GET", "/sessions/"+s.ID+"/tools", nil, &ts); st != 200 || len(ts) < 4 {
			return fmt.Errorf("Session.tools: %d, %d tools", st, len(ts))
		}
		return nil
	}},
}

func apiCall(w *world, s session, tool string, input any, status, want string) error {
	st, c := w.call(s.Token, s.ID, tool, input, 30)
	if st != 200 || c.Status != status || !strings.Contains(string(c.Output), want) {
		return fmt.Errorf("%s: %d %+v %s", tool, st, c, c.Output)
	}
	return nil
}

// connectMCP is mcpSession for a goroutine: it returns its error rather than
// failing the test from outside the test's goroutine.
func connectMCP(w *world, s session) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "soak-agent", Version: "1"}, nil)
	return client.Connect(w.t.Context(), &mcp.StreamableClientTransport{Endpoint: w.srv.URL + "/mcp/sessions/" + s.ID,
		HTTPClient: &http.Client{Transport: bearer{s.Token, http.DefaultTransport}}}, nil)
}

type footprint struct {
	goroutines, fds int
	heap            uint64
	// dbInUse: connections of the database pools in use (a leaked
	// transaction or result set holds one for good). Their idle
	// connections, kept open by design up to each pool's limit, are not
	// counted in fds.
	dbInUse int
}

func measure(t *testing.T, db *models.DB) footprint {
	t.Helper()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	f := footprint{goroutines: goruntime.NumGoroutine(), fds: len(fds), heap: ms.HeapInuse}
	pools := []*gorm.DB{db.DB}
	if nf := db.NoFlushWait(); nf != db.DB {
		pools = append(pools, nf)
	}
	for _, p := range pools {
		sqlDB, err := p.DB()
		if err != nil {
			t.Fatal(err)
		}
		st := sqlDB.Stats()
		f.fds -= st.Idle
		f.dbInUse += st.InUse
	}
	return f
}

// settle measures until the counts come back to the baseline and no database
// connection is in use, for up to 15 s: connections and streams close on their
// own timers, and work the server does on its own (a suspension after a
// session ends, a flush of last activity) may hold a connection for a moment.
func settle(t *testing.T, db *models.DB, before footprint) footprint {
	t.Helper()
	var now footprint
	for end := time.Now().Add(15 * time.Second); ; {
		now = measure(t, db)
		back := now.goroutines <= before.goroutines+10 && now.fds <= before.fds+10 && now.dbInUse == 0
		if back || time.Now().After(end) {
			return now
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serverErrors is what the server logged at error level, for a failure's message.
func serverErrors(log string) string {
	var lines []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=ERROR") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-20):], "")
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:goruntime.Stack(buf, true)])
}
