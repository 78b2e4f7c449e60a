package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionCallLogSaysWhichProgramACallRanIn: a call made inside a
// session's code-mode program says "in program <id>" on the session page,
// linking to the Audit page's view of that program's calls; a flat call
// says nothing of the kind. ToolCall.list and ToolCall.get name the program.
func TestSessionCallLogSaysWhichProgramACallRanIn(t *testing.T) {
	w := newWorld(t, codeConfig)
	s := w.session(w.vault)
	cs := w.mcpSession(s)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "do", Arguments: map[string]any{
		"program": `return (await $.mcp.everything.echo({ message: "from a program" })).text;`}})
	if err != nil {
		t.Fatalf("do: %v", err)
	}
	var out struct{ Action string }
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil || res.IsError || out.Action == "" {
		t.Fatalf("do answered %s (%v)", resultText(res), err)
	}
	var calls []struct{ ID, Program string }
	if st := w.api(w.owner, "GET", "/sessions/"+s.ID+"/tool_calls", nil, &calls); st != 200 || len(calls) != 1 || calls[0].Program != out.Action {
		t.Fatalf("ToolCall.list: %d %+v; want one call in program %s", st, calls, out.Action)
	}
	var got struct{ Program string }
	if st := w.api(w.owner, "GET", "/tool_calls/"+calls[0].ID, nil, &got); st != 200 || got.Program != out.Action {
		t.Fatalf("ToolCall.get: %d %+v; want the call in program %s", st, got, out.Action)
	}
	page := mustGet(w.browserOf(), "/sessions/"+s.ID)
	want := `in program <a href="/audit?parent=` + out.Action + `"><code>` + out.Action + `</code></a>`
	if !strings.Contains(page, `data-testid="call-program"`) || !strings.Contains(page, want) {
		t.Fatalf("the session page does not say the call ran in program %s (want %s):\n%s", out.Action, want, page)
	}

	// A person's program (through /mcp, with the official TypeScript
	// client) calling the session's tool: the call names that program too.
	_, res2 := codeClient(t, w.env, w.owner, codeStep{"do", map[string]any{"program": `const c = await $.ToolCall.create({ session: "` + s.ID +
		`", tool: "mcp__everything__echo", input: { message: "from a person's program" } }); return c.id;`}})
	run := decodeProgram(t, res2[0])
	var callID string
	if run.Error != nil || json.Unmarshal(run.Value, &callID) != nil || callID == "" {
		t.Fatalf("the person's do: %+v %s", run, res2[0].Text)
	}
	if st := w.api(w.owner, "GET", "/tool_calls/"+callID, nil, &got); st != 200 || got.Program != run.Action {
		t.Fatalf("ToolCall.get of the person's program's call: %d %+v; want program %s", st, got, run.Action)
	}
	page = mustGet(w.browserOf(), "/sessions/"+s.ID)
	if want := `in program <a href="/audit?parent=` + run.Action + `">`; !strings.Contains(page, want) {
		t.Fatalf("the session page does not say the person's call ran in program %s", run.Action)
	}
}
