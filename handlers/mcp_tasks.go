package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// MCP Tasks (protocol revision 2025-11-25): a client may make tools/call as a
// task (params.task present) and get a task id at once, then poll tasks/get,
// fetch the result with tasks/result, list with tasks/list and cancel with
// tasks/cancel; so an ask-first call may wait hours for an approver while no
// HTTP request stays open.
//
// The official Go SDK (v1.8.0) has no tasks: it refuses tasks/* methods
// before any middleware runs, and its types have no field for the tasks
// capability or a tool's execution.taskSupport. So these methods are served
// here, in front of the SDK's streamable handler, and the SDK's initialize
// and tools/list answers are completed on their way out. Everything else,
// and the MCP session itself (its id, its binding to the token that opened
// it), stays the SDK's: a task message is first checked by the SDK as a ping
// with the same headers, so a missing, unknown or borrowed Mcp-Session-Id is
// answered exactly as for any other message.
//
// A task is a Subako tool call (the task id is the call id), made through
// ToolCall.create as a plain call is, and visible only to the principal that
// made it, in the session whose endpoint made it. It lives in the runtime,
// not in the request or the MCP session: a client that disconnects, or opens
// a new MCP session, finds its task where it left it.

const (
	tasksProtocol = "2025-11-25" // the revision whose core has tasks
	// relatedTaskKey is the _meta key naming the task a result belongs to.
	relatedTaskKey = "io.modelcontextprotocol/related-task"
	// taskResultWait bounds one tasks/result; a client asks again after it.
	taskResultWait = 24 * time.Hour
	// taskKeepalive: a tasks/result stream writes at least this often, so
	// proxies do not cut a request that waits for an approver.
	taskKeepalive = 15 * time.Second
	// tasksPage is tasks/list's page size.
	tasksPage = 50
	// Polling intervals suggested to the client: an approver takes minutes,
	// a running call seconds.
	pollAwaiting = 5 * time.Second
	pollRunning  = time.Second
	// maxTaskStatusMessage bounds a task's statusMessage (an error may be 20 KiB).
	maxTaskStatusMessage = 500
)

// rpcMessage is what the endpoint reads of a POSTed JSON-RPC message to
// decide whether it is a task's; everything else is the SDK's to read.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type taskParams struct {
	TaskID *string         `json:"taskId"`
	Cursor *string         `json:"cursor"`
	Task   json.RawMessage `json:"task"`
}

// serveHTTP answers one HTTP request of a session's MCP endpoint: task
// messages here, everything else through the SDK (initialize and tools/list
// answers completed with what tasks add).
func (m *MCP) serveHTTP(w http.ResponseWriter, req *http.Request, s *mcpSession, session string, p runtime.Principal) {
	if req.Method != http.MethodPost {
		s.handler.ServeHTTP(w, req)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		// Over the body limit, or the client went away: the SDK says which.
		req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		s.handler.ServeHTTP(w, req)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"task`)) && !bytes.Contains(body, []byte(`"initialize"`)) && !bytes.Contains(body, []byte(`"tools/list"`)) {
		// Most messages (a plain tools/call) are the SDK's alone: a byte
		// search rather than a second decoding of their arguments.
		s.handler.ServeHTTP(w, req)
		return
	}
	var msg rpcMessage
	if exactUnmarshal(body, &msg) != nil || len(msg.ID) == 0 {
		// A batch, a notification, a response or no JSON at all: the SDK's.
		s.handler.ServeHTTP(w, req)
		return
	}
	var params taskParams
	if len(msg.Params) > 0 {
		_ = exactUnmarshal(msg.Params, &params)
	}
	switch {
	case msg.Method == "initialize" || msg.Method == "tools/list":
		rw := &bufferedWriter{header: http.Header{}}
		s.handler.ServeHTTP(rw, req)
		rw.writeTo(w, func(result map[string]json.RawMessage) { addTasks(msg.Method, req, result) })
		return
	case strings.HasPrefix(msg.Method, "tasks/"), msg.Method == "tools/call" && len(params.Task) > 0 && string(params.Task) != "null":
	default:
		s.handler.ServeHTTP(w, req)
		return
	}
	ss, ok := m.checkTaskSession(w, req, s)
	if !ok {
		return
	}
	t := taskRequest{m: m, w: w, req: req, session: session, p: p, ss: ss, id: msg.ID}
	switch msg.Method {
	case "tools/call":
		t.create(msg.Params)
	case "tasks/get":
		t.get(params)
	case "tasks/result":
		t.result(params)
	case "tasks/list":
		t.list(params)
	case "tasks/cancel":
		t.cancel(params)
	default:
		t.fail(jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q not found: the task methods are tasks/get, tasks/result, tasks/list and tasks/cancel", msg.Method))
	}
}

// exactUnmarshal decodes a JSON object into v's fields by their exact JSON
// names, as the SDK reads a message: encoding/json alone would take
// "Method" or "TASKID" for "method" or "taskId", and the endpoint would act
// on a message the SDK reads otherwise.
func exactUnmarshal(raw []byte, v any) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	for k := range obj {
		if !exactFields(v)[k] {
			delete(obj, k)
		}
	}
	exact, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(exact, v)
}

// exactFields are the JSON names of the fields of the struct v points to.
func exactFields(v any) map[string]bool {
	t := reflect.TypeOf(v).Elem()
	out := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// checkTaskSession has the SDK check the request's MCP session as it checks
// any message's: a ping with the same headers. A refusal (no session id,
// an unknown one, one opened by another token) is written as the SDK wrote
// it. It returns the MCP session.
func (m *MCP) checkTaskSession(w http.ResponseWriter, req *http.Request, s *mcpSession) (*mcp.ServerSession, bool) {
	probe := req.Clone(req.Context())
	ping := []byte(`{"jsonrpc":"2.0","id":"subako-task-check","method":"ping"}`)
	probe.Body, probe.ContentLength = io.NopCloser(bytes.NewReader(ping)), int64(len(ping))
	for k := range probe.Header {
		// Headers that name the message (a later revision's Mcp-Method) name
		// the task message, not the ping.
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Mcp-") && http.CanonicalHeaderKey(k) != "Mcp-Session-Id" && http.CanonicalHeaderKey(k) != "Mcp-Protocol-Version" {
			probe.Header.Del(k)
		}
	}
	probe.Header.Del("Content-Length")
	rw := &bufferedWriter{header: http.Header{}}
	s.handler.ServeHTTP(rw, probe)
	if rw.status() != http.StatusOK || !bytes.Contains(rw.buf.Bytes(), []byte(`"result"`)) {
		rw.writeTo(w, nil)
		return nil, false
	}
	id := req.Header.Get("Mcp-Session-Id")
	for ss := range s.server.Sessions() {
		if ss.ID() == id {
			return ss, true
		}
	}
	http.Error(w, "session not found", http.StatusNotFound)
	return nil, false
}

// taskRequest is one task message being answered.
type taskRequest struct {
	m       *MCP
	w       http.ResponseWriter
	req     *http.Request
	session string
	p       runtime.Principal
	ss      *mcp.ServerSession
	id      json.RawMessage
}

// create is a task-augmented tools/call: ToolCall.create as a plain call
// makes it (governed and recorded the same), answered at once with the task.
func (t taskRequest) create(raw json.RawMessage) {
	var params mcp.CallToolParamsRaw
	if err := exactUnmarshal(raw, &params); err != nil {
		t.fail(jsonrpc.CodeInvalidParams, "params of tools/call: "+err.Error())
		return
	}
	var task struct {
		TTL *float64 `json:"ttl"`
	}
	if err := json.Unmarshal(gjsonField(raw, "task"), &task); err != nil {
		t.fail(jsonrpc.CodeInvalidParams, `params.task must be an object such as {"ttl": 60000}`)
		return
	}
	// The client's ttl is a wish; the call is kept with the session's others.
	creq := &mcp.CallToolRequest{Session: t.ss, Params: &params, Extra: &mcp.RequestExtra{Header: t.req.Header}}
	zero := 0.0
	// The call outlives this request: it waits for its approver in the runtime.
	ctx := context.WithoutCancel(t.req.Context())
	call, err := t.m.h.RT.ToolCallCreate(ctx, t.p, runtime.ToolCallInput{Session: t.session, Tool: params.Name,
		Input: params.Arguments, WaitSeconds: &zero, Model: callModel(creq), ClientInfo: callClient(creq)})
	if _, ok := runtime.AsError(err); ok && call.ID != "" {
		// Refused but recorded (no room, a tool that changed since publish):
		// the task is failed and its statusMessage says why.
		err = nil
	}
	if e, ok := runtime.AsError(err); ok && (e.Code == "unknown_tool" || e.Kind == runtime.KindInvalid) {
		// No call was made: there is no task to give, so the protocol error
		// names what is wrong (the tool, or the input's field).
		t.fail(jsonrpc.CodeInvalidParams, e.Error())
		return
	}
	if err != nil {
		t.runtimeError(err)
		return
	}
	t.reply(map[string]any{"task": taskOf(call)})
}

// gjsonField is one field of a JSON object, or nil.
func gjsonField(raw json.RawMessage, name string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	return obj[name]
}

// taskID is params.taskId, or a -32602 answer naming it.
func (t taskRequest) taskID(params taskParams) (string, bool) {
	if params.TaskID == nil || *params.TaskID == "" {
		t.fail(jsonrpc.CodeInvalidParams, "params.taskId is required: the taskId a task-augmented tools/call returned")
		return "", false
	}
	if len(*params.TaskID) > 100 {
		t.fail(jsonrpc.CodeInvalidParams, fmt.Sprintf("params.taskId must be at most 100 characters; it has %d", len(*params.TaskID)))
		return "", false
	}
	return *params.TaskID, true
}

func (t taskRequest) get(params taskParams) {
	id, ok := t.taskID(params)
	if !ok {
		return
	}
	call, err := t.m.h.RT.OwnToolCall(t.req.Context(), t.p, t.session, id)
	if err != nil {
		t.taskError(id, err)
		return
	}
	t.reply(taskOf(call))
}

// result waits until the task is final and answers what the plain call
// would have. The answer is a stream when the client takes one: it carries
// the task's status as it changes, and keeps the request alive while an
// approver decides. The request's end leaves the task as it was.
func (t taskRequest) result(params taskParams) {
	id, ok := t.taskID(params)
	if !ok {
		return
	}
	ctx := t.req.Context()
	stream := acceptsStream(t.req)
	var last taskView
	lastWrite := time.Now()
	seen := func(call runtime.ToolCallView) {
		if !stream {
			return
		}
		if now := taskOf(call); call.Open() && (now.Status != last.Status || now.StatusMessage != last.StatusMessage) {
			if last.TaskID == "" {
				t.startStream()
			}
			last = now
			t.event(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": now})
			lastWrite = time.Now()
		} else if time.Since(lastWrite) >= taskKeepalive {
			fmt.Fprint(t.w, ": waiting\n\n")
			flush(t.w)
			lastWrite = time.Now()
		}
	}
	call, err := t.m.h.RT.OwnToolCallWait(ctx, t.p, t.session, id, taskResultWait, seen)
	if ctx.Err() != nil {
		return // the client went away; the task goes on
	}
	var out any
	switch {
	case err != nil:
		if last.TaskID == "" {
			t.taskError(id, err)
			return
		}
		out = errorMessage(t.id, jsonrpc.CodeInternalError, err.Error())
	case call.Open():
		out = errorMessage(t.id, jsonrpc.CodeInternalError, fmt.Sprintf("task %q is still %s after %s: call tasks/result again", id, taskOf(call).Status, taskResultWait))
	default:
		res := callResult(call)
		res.Meta = mcp.Meta{relatedTaskKey: map[string]any{"taskId": id}}
		out = map[string]any{"jsonrpc": "2.0", "id": t.id, "result": res}
	}
	if last.TaskID == "" {
		t.writeJSON(out)
		return
	}
	t.event(out)
}

func (t taskRequest) list(params taskParams) {
	cursor := ""
	if params.Cursor != nil {
		cursor = *params.Cursor
	}
	calls, links, err := t.m.h.RT.OwnToolCallList(t.req.Context(), t.p, t.session, cursor, tasksPage)
	if e, ok := runtime.AsError(err); ok && e.Field == "cursor" {
		t.fail(jsonrpc.CodeInvalidParams, "params.cursor must be a nextCursor tasks/list gave out, unchanged")
		return
	}
	if err != nil {
		t.runtimeError(err)
		return
	}
	tasks := make([]taskView, 0, len(calls))
	for _, c := range calls {
		tasks = append(tasks, taskOf(c))
	}
	out := map[string]any{"tasks": tasks}
	if links.Next != "" {
		out["nextCursor"] = links.Next
	}
	t.reply(out)
}

func (t taskRequest) cancel(params taskParams) {
	id, ok := t.taskID(params)
	if !ok {
		return
	}
	ctx := context.WithoutCancel(t.req.Context())
	call, err := t.m.h.RT.OwnToolCall(ctx, t.p, t.session, id)
	if err != nil {
		t.taskError(id, err)
		return
	}
	if !call.Open() {
		t.fail(jsonrpc.CodeInvalidParams, fmt.Sprintf("cannot cancel task %q: it is already %s", id, taskOf(call).Status))
		return
	}
	// The runtime's cancel, as for a cancelled request: the approval leaves
	// every queue and can no longer be approved; a running call is stopped.
	call, err = t.m.h.RT.ToolCallCancel(ctx, t.p, id, "")
	if e, ok := runtime.AsError(err); ok && e.Code == "call_finished" {
		if call, err = t.m.h.RT.OwnToolCall(ctx, t.p, t.session, id); err == nil {
			t.fail(jsonrpc.CodeInvalidParams, fmt.Sprintf("cannot cancel task %q: it is already %s", id, taskOf(call).Status))
			return
		}
	}
	if err != nil {
		t.taskError(id, err)
		return
	}
	t.reply(taskOf(call))
}

// taskView is a task as MCP shows it.
type taskView struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is null: a task is kept as long as the session's calls are.
	TTL          *int64 `json:"ttl"`
	PollInterval int64  `json:"pollInterval,omitempty"`
}

// taskOf is a call as a task. While it waits for an approver it is
// "working", not "input_required": that status asks the client itself for
// input (and a client then blocks on tasks/result); an approver is someone else.
func taskOf(c runtime.ToolCallView) taskView {
	v := taskView{TaskID: c.ID, CreatedAt: taskTime(c.CreatedAt), LastUpdatedAt: taskTime(c.CreatedAt)}
	for _, at := range []*time.Time{c.StartedAt, c.FinishedAt} {
		if at != nil && at.After(c.CreatedAt) {
			v.LastUpdatedAt = taskTime(*at)
		}
	}
	if c.Approval != nil && c.Approval.DecidedAt != nil && c.FinishedAt == nil {
		v.LastUpdatedAt = taskTime(*c.Approval.DecidedAt)
	}
	switch c.Status {
	case runtime.CallSucceeded:
		v.Status = "completed"
	case runtime.CallFailed:
		v.Status, v.StatusMessage = "failed", c.Error
		if c.Cancelled() {
			v.Status, v.StatusMessage = "cancelled", c.Reason
		}
	case runtime.CallRefused:
		v.Status, v.StatusMessage = "failed", "refused: "+c.Reason
		if c.Cancelled() {
			v.Status, v.StatusMessage = "cancelled", c.Reason
		}
	case runtime.CallAwaitingApproval:
		v.Status, v.StatusMessage, v.PollInterval = "working", "waiting for an approver", pollAwaiting.Milliseconds()
	case runtime.CallWaitingClient:
		v.Status, v.StatusMessage, v.PollInterval = "working", "waiting for the client to complete it", pollAwaiting.Milliseconds()
	default:
		v.Status, v.StatusMessage, v.PollInterval = "working", c.Status, pollRunning.Milliseconds()
	}
	v.StatusMessage = clipText(v.StatusMessage, maxTaskStatusMessage)
	return v
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func taskTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// taskError answers a runtime error about one task: a task this principal
// cannot see is invalid params naming it, as the spec says for unknown ids.
func (t taskRequest) taskError(id string, err error) {
	if e, ok := runtime.AsError(err); ok && (e.Kind == runtime.KindNotFound || e.Kind == runtime.KindForbidden) {
		t.fail(jsonrpc.CodeInvalidParams, fmt.Sprintf("no task %q: a task is a tools/call made as a task in this session, by the same agent or person", id))
		return
	}
	t.runtimeError(err)
}

func (t taskRequest) runtimeError(err error) {
	if e, ok := runtime.AsError(err); ok {
		code := int64(jsonrpc.CodeInternalError)
		if e.Kind == runtime.KindInvalid {
			code = jsonrpc.CodeInvalidParams
		}
		t.fail(code, e.Error())
		return
	}
	t.m.h.Log.Error("mcp tasks", "method", t.req.Method, "session", t.session, "err", err)
	t.fail(jsonrpc.CodeInternalError, "internal error")
}

func (t taskRequest) fail(code int64, msg string) { t.writeJSON(errorMessage(t.id, code, msg)) }

func errorMessage(id json.RawMessage, code int64, msg string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
}

func (t taskRequest) reply(result any) {
	t.writeJSON(map[string]any{"jsonrpc": "2.0", "id": t.id, "result": result})
}

func (t taskRequest) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorMessage(t.id, jsonrpc.CodeInternalError, "internal error: "+err.Error()))
	}
	t.w.Header().Set("Content-Type", "application/json")
	t.w.WriteHeader(http.StatusOK)
	_, _ = t.w.Write(b)
}

func (t taskRequest) startStream() {
	h := t.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	t.w.WriteHeader(http.StatusOK)
}

func (t taskRequest) event(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(t.w, "event: message\ndata: %s\n\n", b)
	flush(t.w)
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

func acceptsStream(req *http.Request) bool {
	for _, a := range req.Header.Values("Accept") {
		if strings.Contains(a, "text/event-stream") {
			return true
		}
	}
	return false
}

// addTasks completes the SDK's initialize and tools/list results for a
// client on the revision that has tasks: the tasks capability, and every
// tool callable as a task or not (its execution.taskSupport "optional").
func addTasks(method string, req *http.Request, result map[string]json.RawMessage) {
	switch method {
	case "initialize":
		var version string
		if json.Unmarshal(result["protocolVersion"], &version) != nil || version != tasksProtocol {
			return
		}
		var caps map[string]json.RawMessage
		if json.Unmarshal(result["capabilities"], &caps) != nil || caps == nil {
			caps = map[string]json.RawMessage{}
		}
		caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
		result["capabilities"], _ = json.Marshal(caps)
	case "tools/list":
		if req.Header.Get("Mcp-Protocol-Version") != tasksProtocol {
			return
		}
		var tools []map[string]json.RawMessage
		if json.Unmarshal(result["tools"], &tools) != nil {
			return
		}
		for _, tool := range tools {
			tool["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
		}
		result["tools"], _ = json.Marshal(tools)
	}
}

// bufferedWriter holds a response of the SDK's so it can be completed (or
// relayed) whole. initialize, tools/list and ping answer at once, so their
// streams end with the request and can be held.
type bufferedWriter struct {
	header http.Header
	code   int
	buf    bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.buf.Write(p)
}
func (b *bufferedWriter) Flush() {}
func (b *bufferedWriter) status() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}

// writeTo writes the held response to w, each JSON-RPC result in it (a JSON
// body, or an event of a stream) passed through edit first when edit is set.
func (b *bufferedWriter) writeTo(w http.ResponseWriter, edit func(map[string]json.RawMessage)) {
	body := b.buf.Bytes()
	if edit != nil && b.status() == http.StatusOK {
		if strings.HasPrefix(b.header.Get("Content-Type"), "text/event-stream") {
			lines := bytes.Split(body, []byte("\n"))
			for i, line := range lines {
				if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					lines[i] = append([]byte("data: "), editResult(data, edit)...)
				}
			}
			body = bytes.Join(lines, []byte("\n"))
		} else {
			body = editResult(body, edit)
		}
		b.header.Del("Content-Length")
	}
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status())
	_, _ = w.Write(body)
}

// editResult passes a JSON-RPC response's result through edit; anything
// else comes back as it was.
func editResult(msg []byte, edit func(map[string]json.RawMessage)) []byte {
	var env map[string]json.RawMessage
	if json.Unmarshal(msg, &env) != nil || env["result"] == nil {
		return msg
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(env["result"], &result) != nil || result == nil {
		return msg
	}
	edit(result)
	var err error
	if env["result"], err = json.Marshal(result); err != nil {
		return msg
	}
	out, err := json.Marshal(env)
	if err != nil {
		return msg
	}
	return out
}
