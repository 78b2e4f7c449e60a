package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

// rawMCP speaks JSON-RPC to a session's MCP endpoint over plain HTTP, as a
// client on protocol revision 2025-11-25 does, to see the exact answers.
type rawMCP struct {
	w       *world
	url     string
	token   string
	session string // Mcp-Session-Id
	next    int
}

type rpcAnswer struct {
	status int
	header http.Header
	body   string
	// Messages are the JSON-RPC messages of the answer, a stream's in order.
	messages []map[string]json.RawMessage
}

func (a rpcAnswer) last() map[string]json.RawMessage {
	if len(a.messages) == 0 {
		return nil
	}
	return a.messages[len(a.messages)-1]
}

// result decodes the final message's result; it fails the test on an error.
func (a rpcAnswer) result(t *testing.T, out any) {
	t.Helper()
	m := a.last()
	if m == nil || m["result"] == nil {
		t.Fatalf("no result: %d %s", a.status, a.body)
	}
	if err := json.Unmarshal(m["result"], out); err != nil {
		t.Fatalf("decode result %s: %v", m["result"], err)
	}
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (a rpcAnswer) rpcError(t *testing.T) rpcErr {
	t.Helper()
	m := a.last()
	var e rpcErr
	if m == nil || m["error"] == nil || json.Unmarshal(m["error"], &e) != nil {
		t.Fatalf("want a JSON-RPC error, got %d %s", a.status, a.body)
	}
	return e
}

func (w *world) rawMCP(token, sessionID string) *rawMCP {
	c := &rawMCP{w: w, url: w.srv.URL + "/mcp/sessions/" + sessionID, token: token}
	init := c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-tasks", "version": "1"}})
	if init.status != 200 {
		w.t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	c.session = init.header.Get("Mcp-Session-Id")
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *rawMCP) call(method string, params any) rpcAnswer {
	c.next++
	msg := map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	return c.post(string(b))
}

func (c *rawMCP) post(body string) rpcAnswer {
	c.w.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.w.t.Fatalf("POST %s: %v", c.url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.TrimSpace(data) != "" {
				var m map[string]json.RawMessage
				if json.Unmarshal([]byte(data), &m) == nil {
					a.messages = append(a.messages, m)
				}
			}
		}
	} else if len(raw) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			a.messages = append(a.messages, m)
		}
	}
	return a
}

type mcpTask struct {
	TaskID        string  `json:"taskId"`
	Status        string  `json:"status"`
	StatusMessage string  `json:"statusMessage"`
	CreatedAt     string  `json:"createdAt"`
	LastUpdatedAt string  `json:"lastUpdatedAt"`
	TTL           *int64  `json:"ttl"`
	PollInterval  float64 `json:"pollInterval"`
}

// The raw JSON-RPC of MCP Tasks: the capability and each tool's taskSupport
// are advertised on 2025-11-25; a task-augmented ask-first call answers a
// task at once and waits for its approver in the runtime; tasks/get,
// tasks/list, tasks/result and tasks/cancel answer per the spec; a bad task
// id is -32602 naming it, and another principal's task does not exist for it.
func TestMCPTasksRawJSONRPC(t *testing.T) {
	t.Parallel()
	w := newWorld(t, askConfig)
	s := w.session(w.vault)
	c := w.rawMCP(s.Token, s.ID)

	// initialize said tasks (checked through a fresh client's answer).
	init := (&rawMCP{w: w, url: c.url, token: s.Token}).call("initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "probe", "version": "1"}})
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *json.RawMessage `json:"tools"`
			Tasks *struct {
				List     *json.RawMessage `json:"list"`
				Cancel   *json.RawMessage `json:"cancel"`
				Requests struct {
					Tools struct {
						Call *json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	init.result(t, &ir)
	if ir.ProtocolVersion != "2025-11-25" || ir.Capabilities.Tools == nil || ir.Capabilities.Tasks == nil || ir.Capabilities.Tasks.List == nil ||
		ir.Capabilities.Tasks.Cancel == nil || ir.Capabilities.Tasks.Requests.Tools.Call == nil {
		t.Fatalf("initialize does not advertise tasks for tools/call, list and cancel: %s", init.body)
	}
	// An older revision's client is not told about tasks.
	old := (&rawMCP{w: w, url: c.url, token: s.Token}).call("initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "probe", "version": "1"}})
	if old.status != 200 || strings.Contains(old.body, `"tasks"`) {
		t.Fatalf("a 2025-06-18 client is told about tasks: %d %s", old.status, old.body)
	}

	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	c.call("tools/list", map[string]any{}).result(t, &list)
	if len(list.Tools) == 0 {
		t.Fatal("tools/list is empty")
	}
	for _, tool := range list.Tools {
		if tool.Execution.TaskSupport != "optional" {
			t.Fatalf("tool %s: execution.taskSupport %q, want optional", tool.Name, tool.Execution.TaskSupport)
		}
	}

	// An ask-first call made as a task: a task at once, waiting for an approver.
	created := c.call("tools/call", map[string]any{"name": "mcp__loud__echo", "arguments": map[string]any{"message": "as a task"}, "task": map[string]any{"ttl": 60000}})
	var cr struct{ Task mcpTask }
	created.result(t, &cr)
	task := cr.Task
	if !strings.HasPrefix(task.TaskID, "call_") || task.Status != "working" || task.StatusMessage != "waiting for an approver" ||
		task.CreatedAt == "" || task.LastUpdatedAt == "" || task.TTL != nil || task.PollInterval <= 0 || !strings.Contains(created.body, `"ttl":null`) {
		t.Fatalf("the created task: %+v (%s)", task, created.body)
	}
	// It is the session's call, recorded and queued like a plain one.
	calls := w.callsOf(s)
	if len(calls) != 1 || calls[0].ID != task.TaskID || calls[0].Status != "awaiting_approval" || calls[0].Client != "raw-tasks/1" {
		t.Fatalf("the task's call: %+v", calls)
	}
	ap := w.pending(w.owner, "state=pending", 1)[0]

	var got mcpTask
	c.call("tasks/get", map[string]any{"taskId": task.TaskID}).result(t, &got)
	if got.TaskID != task.TaskID || got.Status != "working" || got.StatusMessage != "waiting for an approver" {
		t.Fatalf("tasks/get while waiting: %+v", got)
	}

	// Bad ids: -32602 naming the id or the field.
	for _, tc := range []struct {
		params any
		want   string
	}{
		{map[string]any{"taskId": "call_nope"}, `no task "call_nope"`},
		{map[string]any{}, "params.taskId is required"},
		{map[string]any{"taskId": strings.Repeat("x", 101)}, "params.taskId must be at most 100 characters"},
	} {
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			e := c.call(method, tc.params).rpcError(t)
			if e.Code != -32602 || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("%s %v: %+v, want -32602 with %q", method, tc.params, e, tc.want)
			}
		}
	}
	if e := c.call("tasks/list", map[string]any{"cursor": "garbage"}).rpcError(t); e.Code != -32602 || !strings.Contains(e.Message, "params.cursor") {
		t.Fatalf("tasks/list with a bad cursor: %+v", e)
	}
	if e := c.call("tasks/frobnicate", map[string]any{}).rpcError(t); e.Code != -32601 {
		t.Fatalf("an unknown tasks method: %+v", e)
	}

	// Another principal (the owner's own token, on its own MCP session) finds no such task.
	other := w.rawMCP(w.owner, s.ID)
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if e := other.call(method, map[string]any{"taskId": task.TaskID}).rpcError(t); e.Code != -32602 || !strings.Contains(e.Message, `no task "`+task.TaskID+`"`) {
			t.Fatalf("%s of another principal's task: %+v", method, e)
		}
	}
	var otherList struct{ Tasks []mcpTask }
	other.call("tasks/list", nil).result(t, &otherList)
	if len(otherList.Tasks) != 0 {
		t.Fatalf("tasks/list shows another principal's tasks: %+v", otherList.Tasks)
	}
	// Its MCP session id is its own: presented with this agent's token, the SDK refuses it.
	borrowed := &rawMCP{w: w, url: c.url, token: s.Token, session: other.session}
	if a := borrowed.call("tasks/get", map[string]any{"taskId": task.TaskID}); a.status != http.StatusForbidden {
		t.Fatalf("tasks/get on another token's MCP session: %d %s", a.status, a.body)
	}
	if a := (&rawMCP{w: w, url: c.url, token: s.Token, session: "no-such-session"}).call("tasks/list", nil); a.status != http.StatusNotFound {
		t.Fatalf("tasks/list on an unknown MCP session: %d %s", a.status, a.body)
	}

	// tasks/list: the caller's own tasks, newest first.
	w.clock.Advance(time.Second)
	done := c.call("tools/call", map[string]any{"name": "mcp__everything__echo", "arguments": map[string]any{"message": "quick"}, "task": map[string]any{}})
	var dr struct{ Task mcpTask }
	done.result(t, &dr)
	var mine struct {
		Tasks      []mcpTask
		NextCursor string `json:"nextCursor"`
	}
	c.call("tasks/list", nil).result(t, &mine)
	if len(mine.Tasks) != 2 || mine.Tasks[0].TaskID != dr.Task.TaskID || mine.Tasks[1].TaskID != task.TaskID || mine.NextCursor != "" {
		t.Fatalf("tasks/list: %+v", mine)
	}

	// tasks/result waits for the approver, then answers what the plain call would.
	answered := make(chan rpcAnswer, 1)
	go func() { answered <- c.call("tasks/result", map[string]any{"taskId": task.TaskID}) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case a := <-answered:
		t.Fatalf("tasks/result answered before the approver decided: %s", a.body)
	default:
	}
	if st := w.api(w.owner, "POST", "/approvals/"+ap.ID+"/approve", map[string]any{}, nil); st != 200 {
		t.Fatalf("approve: %d", st)
	}
	a := <-answered
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
	}
	a.result(t, &res)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "Echo: as a task" {
		t.Fatalf("tasks/result: %s", a.body)
	}
	if rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != task.TaskID {
		t.Fatalf("tasks/result's _meta does not name its task: %s", a.body)
	}
	// The stream said the task was waiting while it waited.
	if len(a.messages) < 2 || !strings.Contains(a.body, `"method":"notifications/tasks/status"`) || !strings.Contains(a.body, "waiting for an approver") {
		t.Fatalf("tasks/result's stream carried no status notification: %s", a.body)
	}
	got = mcpTask{}
	c.call("tasks/get", map[string]any{"taskId": task.TaskID}).result(t, &got)
	if got.Status != "completed" || got.StatusMessage != "" || got.PollInterval != 0 {
		t.Fatalf("tasks/get after the approval: %+v", got)
	}
	// A finished task cannot be cancelled.
	if e := c.call("tasks/cancel", map[string]any{"taskId": task.TaskID}).rpcError(t); e.Code != -32602 || !strings.Contains(e.Message, "already completed") {
		t.Fatalf("tasks/cancel of a completed task: %+v", e)
	}

	// A denied tool made as a task is refused and recorded as a plain call
	// is: the task failed with the reason, its result the plain call's.
	var denied struct{ Task mcpTask }
	c.call("tools/call", map[string]any{"name": "mcp__everything__get-sum", "arguments": map[string]any{"a": 1, "b": 2}, "task": map[string]any{}}).result(t, &denied)
	if denied.Task.Status != "failed" || !strings.HasPrefix(denied.Task.StatusMessage, "refused: denied by the version's policy") {
		t.Fatalf("a denied tool as a task: %+v", denied.Task)
	}
	if a, ok := w.actionFor("verb=ToolCall.create&verdict=refused", denied.Task.TaskID); !ok || a.Client != "raw-tasks/1" {
		t.Fatalf("the denied task's ToolCall.create Action: %v %+v", ok, a)
	}
	var deniedRes struct {
		Content []struct{ Text string }
		IsError bool `json:"isError"`
	}
	c.call("tasks/result", map[string]any{"taskId": denied.Task.TaskID}).result(t, &deniedRes)
	if !deniedRes.IsError || len(deniedRes.Content) != 1 || !strings.HasPrefix(deniedRes.Content[0].Text, "refused: denied by the version's policy") {
		t.Fatalf("tasks/result of the denied task: %+v", deniedRes)
	}

	// Bad input makes no call: -32602 naming the field; an unknown tool names the tool.
	if e := c.call("tools/call", map[string]any{"name": "mcp__loud__echo", "arguments": map[string]any{"message": 7}, "task": map[string]any{}}).rpcError(t); e.Code != -32602 || !strings.Contains(e.Message, "input.message") {
		t.Fatalf("a task with bad input: %+v", e)
	}
	if e := c.call("tools/call", map[string]any{"name": "mcp__everything__nope", "arguments": map[string]any{}, "task": map[string]any{}}).rpcError(t); e.Code != -32602 || !strings.Contains(e.Message, "mcp__everything__nope") {
		t.Fatalf("a task of an unknown tool: %+v", e)
	}
	if e := c.call("tools/call", map[string]any{"name": "mcp__loud__echo", "arguments": map[string]any{"message": "x"}, "task": 5}).rpcError(t); e.Code != -32602 || !strings.Contains(e.Message, "params.task") {
		t.Fatalf("a task that is not an object: %+v", e)
	}
	if n := len(w.callsOf(s)); n != 3 {
		t.Fatalf("refused task requests made calls: %d calls", n)
	}
	// A plain call still works beside the tasks.
	var plain struct {
		Content []struct{ Text string }
	}
	c.call("tools/call", map[string]any{"name": "mcp__everything__echo", "arguments": map[string]any{"message": "plain"}}).result(t, &plain)
	if len(plain.Content) != 1 || plain.Content[0].Text != "Echo: plain" {
		t.Fatalf("a plain call: %+v", plain)
	}
}

// tsLine is one line the TypeScript client script printed.
type tsLine struct {
	Type            string          `json:"type"`
	At              int64           `json:"at"`
	ProtocolVersion string          `json:"protocolVersion"`
	Capability      json.RawMessage `json:"capability"`
	Task            mcpTask         `json:"task"`
	TaskTools       []string        `json:"taskTools"`
	Tasks           []mcpTask       `json:"tasks"`
	Result          json.RawMessage `json:"result"`
	Error           *rpcErr         `json:"error"`
	OK              bool            `json:"ok"`
}

// tsTasksClient runs web/testdata/mcp_tasks_client.mjs: the official
// TypeScript SDK client with its default options (a 60 s request timeout).
func (w *world) tsTasksClient(s session, mode, tool, message string) <-chan tsLine {
	return tsClientLines[tsLine](w.t, "testdata/mcp_tasks_client.mjs", w.srv.URL+"/mcp/sessions/"+s.ID, s.Token, mode, tool, message)
}

// tsClientLines runs a node script that uses the official TypeScript SDK
// (the copy installed beside server-everything, its path in SUBAKO_TS_SDK)
// and decodes each line it prints as one L, until it exits.
func tsClientLines[L any](t *testing.T, script string, args ...string) <-chan L {
	t.Helper()
	sdk, err := filepath.Abs(filepath.Join("..", mcptest.EverythingDir, "node_modules", "@modelcontextprotocol", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (%v); run: make deps", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "SUBAKO_TS_SDK="+sdk)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan L, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			var l L
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("the client printed %q: %v", sc.Text(), err)
				continue
			}
			lines <- l
		}
		if err := cmd.Wait(); err != nil && t.Context().Err() == nil {
			t.Errorf("%s: %v\n%s", script, err, stderr.String())
		}
	}()
	return lines
}

// next is the client's next line, which must be of the given type.
func nextLine(t *testing.T, lines <-chan tsLine, want string, within time.Duration) tsLine {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("the client ended before %q", want)
		}
		if l.Type != want {
			t.Fatalf("the client said %s %+v, want %q", l.Type, l, want)
		}
		return l
	case <-time.After(within):
		t.Fatalf("no %q from the client within %s", want, within)
	}
	return tsLine{}
}

// The official TypeScript SDK client, default options, against a session's
// endpoint: an ask-first call made as a task outlives the client's 60 s
// request timeout and returns the tool's result once approved; a cancelled
// task's approval can no longer be approved. Both run in parallel (each
// waits a minute or more).
func TestMCPTasksTypeScriptClient(t *testing.T) {
	t.Parallel()
	t.Run("approved after the client's 60 s timeout", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, askConfig)
		s := w.session(w.vault)
		lines := w.tsTasksClient(s, "wait", "mcp__loud__echo", "worth the wait")
		if l := nextLine(t, lines, "connected", time.Minute); l.ProtocolVersion != "2025-11-25" || !strings.Contains(string(l.Capability), `"call"`) {
			t.Fatalf("the client connected on %s with tasks capability %s", l.ProtocolVersion, l.Capability)
		}
		if l := nextLine(t, lines, "tools", 10*time.Second); !slices.Contains(l.TaskTools, "mcp__loud__echo") {
			t.Fatalf("the client does not know the tool takes tasks: %v", l.TaskTools)
		}
		created := nextLine(t, lines, "taskCreated", 10*time.Second)
		since := time.Now()
		if created.Task.Status != "working" || created.Task.StatusMessage != "waiting for an approver" {
			t.Fatalf("the task as created: %+v", created.Task)
		}
		st := nextLine(t, lines, "taskStatus", 10*time.Second) // tasks/get, polled
		if st.Task.TaskID != created.Task.TaskID || st.Task.Status != "working" || st.Task.StatusMessage != "waiting for an approver" {
			t.Fatalf("tasks/get while waiting: %+v", st.Task)
		}
		ap := w.pending(w.owner, "", 1)[0]
		if ap.Call != created.Task.TaskID {
			t.Fatalf("the approval is for %s, the task is %s", ap.Call, created.Task.TaskID)
		}
		// Past the client's default request timeout, nothing has failed.
		select {
		case l := <-lines:
			t.Fatalf("while the approver waited the client said %s %+v", l.Type, l)
		case <-time.After(61*time.Second - time.Since(since)):
		}
		if st := w.api(w.owner, "POST", "/approvals/"+ap.ID+"/approve", map[string]any{}, nil); st != 200 {
			t.Fatalf("approve: %d", st)
		}
		nextLine(t, lines, "taskStatus", 30*time.Second) // completed
		res := nextLine(t, lines, "result", 30*time.Second)
		var r struct {
			Content []struct{ Type, Text string }
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(res.Result, &r); err != nil || r.IsError || len(r.Content) != 1 || r.Content[0].Text != "Echo: worth the wait" || res.At < 60_000 {
			t.Fatalf("the result after %d ms: %s", res.At, res.Result)
		}
		listed := nextLine(t, lines, "listTasks", 10*time.Second)
		if len(listed.Tasks) != 1 || listed.Tasks[0].TaskID != created.Task.TaskID || listed.Tasks[0].Status != "completed" {
			t.Fatalf("tasks/list: %+v", listed.Tasks)
		}
		nextLine(t, lines, "done", 10*time.Second)
		// One call, approved once, ran once: no second item in the queue.
		if calls := w.callsOf(s); len(calls) != 1 || calls[0].Status != "succeeded" || calls[0].Client != "ts-tasks/1.32.2" {
			t.Fatalf("the session's calls: %+v", calls)
		}
		w.pending(w.owner, "", 0)
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, askConfig)
		s := w.session(w.vault)
		lines := w.tsTasksClient(s, "cancel", "mcp__loud__echo", "never mind")
		nextLine(t, lines, "connected", time.Minute)
		nextLine(t, lines, "tools", 10*time.Second)
		created := nextLine(t, lines, "taskCreated", 10*time.Second)
		if g := nextLine(t, lines, "getTask", 10*time.Second); g.Task.Status != "working" || g.Task.StatusMessage != "waiting for an approver" {
			t.Fatalf("tasks/get: %+v", g.Task)
		}
		if c := nextLine(t, lines, "cancelTask", 10*time.Second); c.Task.TaskID != created.Task.TaskID || c.Task.Status != "cancelled" || c.Task.StatusMessage != "cancelled by the caller" {
			t.Fatalf("tasks/cancel: %+v", c.Task)
		}
		if again := nextLine(t, lines, "cancelAgain", 10*time.Second); again.Error == nil || again.Error.Code != -32602 || !strings.Contains(again.Error.Message, "already cancelled") {
			t.Fatalf("tasks/cancel of a cancelled task: %+v", again)
		}
		nextLine(t, lines, "taskStatus", 10*time.Second)
		if e := nextLine(t, lines, "error", 10*time.Second); e.Error == nil || !strings.Contains(e.Error.Message, "was cancelled") {
			t.Fatalf("the stream's end: %+v", e)
		}
		if l := nextLine(t, lines, "listTasks", 10*time.Second); len(l.Tasks) != 1 || l.Tasks[0].Status != "cancelled" {
			t.Fatalf("tasks/list: %+v", l.Tasks)
		}
		nextLine(t, lines, "done", 10*time.Second)
		// The approval left the queue and can never be approved.
		w.pending(w.owner, "", 0)
		var c call
		if st := w.api(w.owner, "GET", "/tool_calls/"+created.Task.TaskID, nil, &c); st != 200 || c.Status != "refused" ||
			!strings.HasPrefix(c.Reason, "cancelled by the caller") || c.Approval == nil || c.Approval.State != "cancelled" {
			t.Fatalf("the cancelled call: %d %+v", st, c)
		}
		var p problem
		if st := w.api(w.owner, "POST", "/approvals/"+c.Approval.ID+"/approve", map[string]any{}, &p); st != http.StatusConflict {
			t.Fatalf("approving a cancelled task's approval: %d %+v", st, p)
		}
		if got := w.waitFinal(w.owner, c.ID); got.Status != "refused" {
			t.Fatalf("after the refused approval the call is %+v", got)
		}
	})
}
