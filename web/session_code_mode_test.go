package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeConfig offers server-everything's tools as code: echo is allowed but
// denied when its message holds "rm -rf" (an argument rule, so the call is
// made and refused), get-sum is denied (so absent from $), and the rest ask
// first (get-env among them).
const codeConfig = `{"mcp_servers": [{"name": "everything", "url": "MCP_URL", "default_policy": "ask",
  "tool_rules": {"echo": {"policy": "allow", "rules": [{"policy": "deny", "input": {"message": {"glob": "*rm -rf*"}}}]},
    "get-sum": "deny"}}],
  "tools_as": "code"}`

// codeProgram calls an allowed tool, an ask-first tool (approved while it
// waits) and a tool the rules deny (caught), and says whether the denied
// get-sum is in $ at all.
const codeProgram = `
const said: string[] = [];
const echoed = await $.mcp.everything.echo({ message: "hello from a program" });
said.push(echoed.text);
const env = await $.mcp.everything["get-env"]({});
said.push(env.text.includes("GZIP_ALLOWED_DOMAINS") ? "env read" : "env missing: " + env.text);
try {
  await $.mcp.everything.echo({ message: "rm -rf /" });
  said.push("not refused");
} catch (e: any) {
  said.push("caught " + e.code + ": " + e.message);
}
said.push(typeof ($.mcp.everything as any)["get-sum"]);
return said;`

type doAnswer struct {
	Value  []string `json:"value"`
	Log    []string `json:"log"`
	Calls  int      `json:"calls"`
	Action string   `json:"action"`
	Error  *struct {
		Code, Message string
	} `json:"error"`
}

// TestSessionCodeModeProgramCallsAreEachChecked: a session of a version with
// tools_as "code", driven by the official Go SDK client, lists search, fetch
// and do; one program calls an allowed tool, an ask-first tool approved in
// the console while the program waits, and a denied one whose refusal the
// program catches; the session has three call records, each one's Action
// linked to the program's, which keeps the program's text and version.
func TestSessionCodeModeProgramCallsAreEachChecked(t *testing.T) {
	w := newWorld(t, codeConfig)
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	ctx := t.Context()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "search,fetch,do" {
		t.Fatalf("a code-mode session lists %v; want search, fetch and do", names)
	}

	found, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "echo"}})
	if err != nil || found.IsError || !strings.Contains(resultText(found), `"call":"$.mcp.everything.echo"`) {
		t.Fatalf("search echo: %v %s", err, resultText(found))
	}
	if all, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{}}); strings.Contains(resultText(all), "get-sum") ||
		!strings.Contains(resultText(all), `"policy":"ask"`) {
		t.Errorf("search lists the denied get-sum, or no ask-first tool: %s", resultText(all))
	}
	types, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"name": "mcp.everything.echo"}})
	if err != nil || types.IsError || !strings.Contains(resultText(types), "echo(input: {") || strings.Contains(resultText(types), "get-env") {
		t.Fatalf("fetch echo's types: %v %s", err, resultText(types))
	}
	whole := sessionTypes(t, w, s)
	if !strings.Contains(whole, `"get-env"(`) || !strings.Contains(whole, "echo(input:") || strings.Contains(whole, "get-sum") {
		t.Errorf("the session's $.d.ts:\n%s", whole)
	}
	if fetched, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"name": "$.d.ts"}}); resultText(fetched) != whole {
		t.Errorf("fetch $.d.ts is not GET /sessions/{session}/$.d.ts")
	}

	// The program runs while the test approves its ask-first call in the console.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "do", Arguments: map[string]any{"program": codeProgram}})
		if err != nil {
			t.Errorf("do: %v", err)
		}
		done <- res
	}()
	ap := w.pending(w.owner, "", 1)[0]
	if ap.Tool != getEnv {
		t.Fatalf("the program's waiting call is %s; want %s", ap.Tool, getEnv)
	}
	if msg := decideInConsole(w.browserOf(), ap.ID, "approve", url.Values{"scope": {"call"}}); !strings.Contains(msg, "Approved") {
		t.Fatalf("approve in the console: flash %q", msg)
	}
	res := <-done
	if res == nil {
		t.FailNow()
	}
	var out doAnswer
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil || res.IsError || out.Error != nil {
		t.Fatalf("do answered %s (%v)", resultText(res), err)
	}
	want := []string{"hello from a program", "env read", "caught refused:", "undefined"}
	if len(out.Value) != 4 || out.Calls != 3 {
		t.Fatalf("the program returned %q after %d calls; want %q…", out.Value, out.Calls, want)
	}
	for i, w := range want {
		if !strings.Contains(out.Value[i], w) {
			t.Errorf("value[%d] = %q; want it to hold %q", i, out.Value[i], w)
		}
	}
	if !strings.Contains(out.Value[2], "denied") {
		t.Errorf("the refusal the program caught does not say why: %q", out.Value[2])
	}

	// Three call records, as flat calls would have made them.
	var calls []struct {
		ID, Tool, Status, Verdict string
	}
	if st := w.api(w.owner, "GET", "/sessions/"+s.ID+"/tool_calls", nil, &calls); st != 200 {
		t.Fatalf("ToolCall.list: %d", st)
	}
	status := map[string]string{}
	for _, c := range calls {
		status[c.Tool+" "+c.Status] = c.ID
	}
	for _, k := range []string{"mcp__everything__echo succeeded", getEnv + " succeeded", "mcp__everything__echo refused"} {
		if status[k] == "" {
			t.Errorf("no call %s among the session's calls %+v", k, calls)
		}
	}
	if len(calls) != 3 {
		t.Errorf("the session has %d calls; want 3: %+v", len(calls), calls)
	}

	// Each call's Action is linked to the program's; the program's keeps its text and version.
	var prog struct {
		Verb, Program, Version, Targets string
	}
	if err := w.rt.DB().Raw("SELECT verb, program, version, targets FROM actions WHERE id = ?", out.Action).Scan(&prog).Error; err != nil {
		t.Fatal(err)
	}
	if prog.Verb != "Program.run" || prog.Program != codeProgram || prog.Version != w.version || prog.Targets != s.ID {
		t.Errorf("the program's Action: %+v; want Program.run with its text, version %s and session %s", prog, w.version, s.ID)
	}
	var linked []struct {
		Verb, Targets, Verdict string
	}
	if err := w.rt.DB().Raw("SELECT verb, targets, verdict FROM actions WHERE parent_id = ? ORDER BY created_at", out.Action).Scan(&linked).Error; err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mcp__everything__echo succeeded", getEnv + " succeeded", "mcp__everything__echo refused"} {
		id := status[k]
		if id != "" && !slicesContainsFunc(linked, func(a struct{ Verb, Targets, Verdict string }) bool {
			return a.Verb == "ToolCall.create" && strings.Contains(a.Targets, id)
		}) {
			t.Errorf("the Action of call %s (%s) is not linked to the program's: linked %+v", id, k, linked)
		}
	}
}

func slicesContainsFunc[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}

// sessionTypes is GET /api/v1/sessions/{session}/$.d.ts with the session's token.
func sessionTypes(t *testing.T, w *world, s session) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.srv.URL+"/api/v1/sessions/"+s.ID+"/$.d.ts", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/typescript") {
		t.Fatalf("GET $.d.ts: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return string(b)
}
