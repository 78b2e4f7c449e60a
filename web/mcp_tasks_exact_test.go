package web_test

import (
	"fmt"
	"strings"
	"testing"
)

// The Tasks interceptor reads a message's keys as the SDK does, exactly:
// "Method", "PARAMS" or "TaskId" are not "method", "params" or "taskId"
// (Go's encoding/json alone matches them case-insensitively), so the
// endpoint never acts on a message the SDK would read otherwise.
func TestMCPTasksReadKeysExactly(t *testing.T) {
	t.Parallel()
	w := newWorld(t, askConfig)
	s := w.session(w.vault)
	c := w.rawMCP(s.Token, s.ID)
	var cr struct{ Task mcpTask }
	c.call("tools/call", map[string]any{"name": "mcp__loud__echo", "arguments": map[string]any{"message": "x"}, "task": map[string]any{}}).result(t, &cr)
	if cr.Task.TaskID == "" {
		t.Fatal("no task")
	}
	// No "method": not a tasks/list, whatever case its key is in.
	if a := c.post(`{"jsonrpc":"2.0","id":91,"METHOD":"tasks/list"}`); strings.Contains(a.body, cr.Task.TaskID) || strings.Contains(a.body, `"tasks"`) {
		t.Errorf("a message without a method answered as tasks/list: %d %s", a.status, a.body)
	}
	// "TaskId" is not taskId.
	e := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":92,"method":"tasks/get","params":{"TaskId":%q}}`, cr.Task.TaskID)).rpcError(t)
	if e.Code != -32602 || !strings.Contains(e.Message, "params.taskId is required") {
		t.Errorf("tasks/get with TaskId: %+v", e)
	}
	// "Task" is not task: the SDK makes a plain call of it, which waits for
	// its approver rather than answer a task (the request is cut short here).
	before := len(w.callsOf(s))
	a := c.post(`{"jsonrpc":"2.0","id":93,"method":"tools/call","params":{"name":"mcp__everything__echo","arguments":{"message":"y"},"Task":{}}}`)
	if strings.Contains(a.body, `"taskId"`) {
		t.Errorf("a tools/call with Task answered a task: %s", a.body)
	}
	if n := len(w.callsOf(s)); n != before+1 {
		t.Errorf("the plain call was not made: %d calls, want %d", n, before+1)
	}
}
