package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// ErrNotAvailable answers calls of a kind this server does not run yet.
var ErrNotAvailable = errors.New("not available on this server yet")

// SandboxExec is one exec in a session's sandbox, for the sandbox runner.
type SandboxExec struct {
	SessionID string
	CallID    string
	Grant     tools.Sandbox
	Input     json.RawMessage
}

// FunctionCall is one call of a function package's tool, for the function runner.
type FunctionCall struct {
	SessionID string
	AgentID   string
	CallID    string
	Grant     tools.Function
	Tool      string
	Input     json.RawMessage
	// Credentials attaches the session vault's credential for the request's
	// URL, after the guest's own credential headers were dropped.
	Credentials func(req *http.Request)
}

// Runners are the executors that live outside the runtime package.
type Runners struct {
	Sandbox  func(ctx context.Context, e SandboxExec) (json.RawMessage, error)
	Function func(ctx context.Context, c FunctionCall) (json.RawMessage, error)
}

// SetSandboxRunner installs the sandbox executor; until then sandbox tools are
// listed, and a call answers a clear "not available" error.
func (r *Runtime) SetSandboxRunner(run func(ctx context.Context, e SandboxExec) (json.RawMessage, error)) {
	r.runners.Sandbox = run
}

// SetFunctionRunner installs the function executor, likewise.
func (r *Runtime) SetFunctionRunner(run func(ctx context.Context, c FunctionCall) (json.RawMessage, error)) {
	r.runners.Function = run
}

// execute runs a queued call (approved, or found queued at start) to its
// end. It is its own goroutine, detached from the request that made the
// call, so a caller that stops waiting does not cancel the tool; the result
// lands in the call's record either way.
func (r *Runtime) execute(id string) {
	ctx := context.Background()
	start := r.now()
	res := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id = ? AND status = ?", id, CallQueued).
		Updates(map[string]any{"status": CallRunning, "started_at": start, "replica_id": r.replica.ID})
	if res.Error != nil || res.RowsAffected != 1 {
		return
	}
	var call models.ToolCall
	if err := r.db.WithContext(ctx).First(&call, "id = ?", id).Error; err != nil {
		return
	}
	var s models.Session
	if err := r.db.WithContext(ctx).First(&s, "id = ?", call.SessionID).Error; err != nil {
		r.finishCall(ctx, call, CallRunning, nil, err)
		return
	}
	r.publish(Event{Kind: "call", ID: id, SessionID: call.SessionID, State: CallRunning})
	r.runStarted(call, s, nil, nil)
}

// callHandle hands a call's result to the caller waiting for it, in memory:
// the caller does not read the record back on every event.
type callHandle struct {
	call models.ToolCall // as recorded when it started
	// opened is the call's ToolCall.create Action, committed with it: the
	// finishing write writes both again if the database lost them
	// (hotpath_finish.go).
	opened models.Action
	done   chan struct{}
	final  *models.ToolCall // the finished record; nil: read the record (it waits for a client)
}

func (h *callHandle) deliver(final *models.ToolCall) {
	if h == nil {
		return
	}
	h.final = final
	close(h.done)
}

// waitStarted waits up to d for a call this process runs, like waitCall.
func (r *Runtime) waitStarted(ctx context.Context, h *callHandle, d time.Duration) (ToolCallView, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	begun := r.now()
	select {
	case <-h.done:
		if h.final != nil {
			return callView(*h.final), nil
		}
		// Waiting for a client: the client's answer comes through another request.
		return r.waitCall(ctx, h.call.ID, h.call.SessionID, max(d-r.now().Sub(begun), 0))
	case <-timer.C:
		// One last look, as waitCall takes one.
		return r.callByID(context.WithoutCancel(ctx), h.call.ID)
	case <-ctx.Done():
		return callView(h.call), nil
	case <-r.hot.closing:
		return callView(h.call), nil
	}
}

// runStarted runs a call recorded running to its end; resolved is its tool
// when the caller has just resolved it, h the caller waiting, if any.
func (r *Runtime) runStarted(call models.ToolCall, s models.Session, resolved *offered, h *callHandle) {
	// ToolCall.cancel stops it through this context (toolcallcancel.go).
	ctx, stopped := r.trackRunning(context.Background(), call.ID)
	defer stopped()
	ctx = withUpstreamProgress(ctx, call.ID) // callprogress.go
	if r.endedSinceCheck(ctx, call) {
		h.deliver(r.refuseEnded(ctx, call))
		return
	}
	var t offered
	if resolved != nil {
		t = *resolved
	} else {
		all, err := r.sessionTools(ctx, s, false)
		if err == nil {
			var ok bool
			if t, ok = findTool(all, call.Tool); !ok {
				err = fmt.Errorf("tool %s is no longer offered in this session", call.Tool)
			}
		}
		if err != nil {
			h.deliver(r.finishStarted(ctx, call, h, nil, err))
			return
		}
	}
	out, err := r.dispatch(ctx, call, s, t)
	if errors.Is(err, errWaitClient) {
		defer h.deliver(nil)
		// Only a call of a session still active waits for its answer; if the
		// session ended while the call started, the call is refused as its
		// other open calls were.
		// The call's own session, by its key: not the set of every active session.
		active := r.db.Model(&models.Session{}).Select("id").Where("id = ? AND state = ?", call.SessionID, SessionActive)
		res := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id = ? AND status = ? AND session_id IN (?)", call.ID, CallRunning, active).
			Update("status", CallWaitingClient)
		if res.Error != nil {
			r.finishCall(ctx, call, CallRunning, nil, fmt.Errorf("could not wait for a client: %w", res.Error))
			return
		}
		state := CallWaitingClient
		if res.RowsAffected == 0 {
			state = CallRefused
			r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id = ? AND status = ?", call.ID, CallRunning).
				Updates(map[string]any{"status": CallRefused, "reason": "the session ended", "finished_at": r.now()})
		}
		r.publish(Event{Kind: "call", ID: call.ID, SessionID: call.SessionID, State: state})
		return
	}
	h.deliver(r.finishStarted(ctx, call, h, out, err))
}

var errWaitClient = errors.New("waiting for a client")

// finish records a call's result, if the call is still in the status expected.
func (r *Runtime) finishCall(ctx context.Context, call models.ToolCall, from string, out json.RawMessage, err error) bool {
	_, ok := r.finishCallRecord(ctx, call, from, out, err)
	return ok
}

// finishCallRecord is finishCall that also returns the finished record, or
// nil when the call was not in status from (or the write failed).
func (r *Runtime) finishCallRecord(ctx context.Context, call models.ToolCall, from string, out json.RawMessage, err error) (*models.ToolCall, bool) {
	upd := r.finishUpdate(call, out, err)
	final, rows, err := r.writeFinish(ctx, call, from, upd)
	if err != nil {
		r.opts.Log.Error("runtime: finish call", "call", call.ID, "err", err)
		return nil, false
	}
	if rows != 1 {
		return nil, false
	}
	r.publish(Event{Kind: "call", ID: call.ID, SessionID: call.SessionID, State: final.Status})
	return final, true
}

// finishUpdate is the columns a call's result sets.
func (r *Runtime) finishUpdate(call models.ToolCall, out json.RawMessage, err error) map[string]any {
	now := r.now()
	started := call.CreatedAt
	if call.StartedAt != nil {
		started = *call.StartedAt
	}
	upd := map[string]any{"finished_at": now, "duration_ms": now.Sub(started).Milliseconds(), "status": CallSucceeded}
	if err != nil {
		upd["status"], upd["error"] = CallFailed, truncate(err.Error(), maxCallErrorBytes)
		recordRefusal(err, upd)
	}
	if len(out) > 0 {
		upd["output"], upd["output_truncated"] = clip(string(out))
	}
	return upd
}

// finished is call with upd applied, as the record reads once it is written.
func finished(call models.ToolCall, upd map[string]any) *models.ToolCall {
	final := call
	now := upd["finished_at"].(time.Time)
	final.FinishedAt, final.DurationMS, final.Status = &now, upd["duration_ms"].(int64), upd["status"].(string)
	if e, ok := upd["error"].(string); ok {
		final.Error = e
	}
	if reason, ok := upd["reason"].(string); ok {
		final.Reason = reason
	}
	if o, ok := upd["output"].(string); ok {
		final.Output, final.OutputTruncated = o, upd["output_truncated"].(bool)
	}
	return &final
}

// dispatch runs the call on its kind's executor.
func (r *Runtime) dispatch(ctx context.Context, call models.ToolCall, s models.Session, t offered) (json.RawMessage, error) {
	input := json.RawMessage(call.Input)
	switch t.Kind {
	case tools.KindMCP:
		return r.runMCP(ctx, s, t, input)
	case tools.KindSkill:
		return r.runSkill(ctx, t, input)
	case tools.KindBuiltin:
		return r.runBuiltin(ctx, s, t, input)
	case tools.KindClient:
		return nil, errWaitClient
	case tools.KindSandbox:
		if r.runners.Sandbox == nil {
			return nil, fmt.Errorf("sandboxes are %w", ErrNotAvailable)
		}
		ctx, cancel := context.WithTimeout(ctx, 3700*time.Second)
		defer cancel()
		return r.runners.Sandbox(ctx, SandboxExec{SessionID: s.ID, CallID: call.ID, Grant: t.Sandbox, Input: input})
	case tools.KindFn:
		if r.runners.Function == nil {
			return nil, fmt.Errorf("functions are %w", ErrNotAvailable)
		}
		return r.runners.Function(ctx, FunctionCall{SessionID: s.ID, AgentID: s.AgentID, CallID: call.ID, Grant: t.Function,
			Tool: t.Tool.Tool, Input: input, Credentials: r.credentialsFor(s.ID)})
	}
	return nil, fmt.Errorf("tool kind %q has no executor", t.Kind)
}

// credentialsFor attaches, to each outgoing request of a function, the
// session vault's credential for that request's URL.
func (r *Runtime) credentialsFor(sessionID string) func(req *http.Request) {
	return func(req *http.Request) {
		_, attach, err := r.attacherFor(req.Context(), sessionID, req.URL.String())
		if err != nil {
			r.opts.Log.Error("runtime: credential for function request", "session", sessionID, "err", err)
			return
		}
		attach(req)
	}
}

func (r *Runtime) runMCP(ctx context.Context, s models.Session, t offered, input json.RawMessage) (json.RawMessage, error) {
	credID, attach, err := r.attacherFor(ctx, s.ID, t.URL)
	if err != nil {
		return nil, err
	}
	res, err := r.mcp.Call(ctx, t.URL, mcpPoolKey(s.ID, credID), attach, t.Tool.Tool, input)
	if err != nil {
		return nil, hideCredentialIn(ctx, err, attach)
	}
	if t.discoveryFailed {
		r.discoveryAnswered(ctx, t.URL, credID)
	}
	secrets := credentialValues(ctx, attach)
	out := hideCredentialsInJSON(mcpOutput(res), secrets)
	if res.IsError {
		return out, fmt.Errorf("the tool answered with an error: %s", truncate(hideCredentials(res.Text, secrets), 2000))
	}
	return out, nil
}
