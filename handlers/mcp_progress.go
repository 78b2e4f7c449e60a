package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
)

// A tools/call on the session endpoint lives as long as the request that
// made it. While it waits, a client that sent a progressToken hears
// notifications/progress at least every progressEvery ("waiting for an
// approver", "running"), and every progress notification the upstream MCP
// server sends for the call, passed on as the server sent it; so a client
// with resetTimeoutOnProgress keeps waiting for as long as the approver takes.
// When the request ends before the call (notifications/cancelled, the HTTP
// request closed), the call is cancelled (ToolCall.cancel as its caller): an
// approval nobody will hear the answer of leaves the queues and can never
// run the tool.

// progressEvery is how often a waiting call reports; MCP clients' timeouts
// reset on each report.
const progressEvery = 5 * time.Second

// lateProgressWait is how long a finished call's answer waits for the
// server's last progress report when the reports so far fall short of their
// total (see report).
const lateProgressWait = 100 * time.Millisecond

// requestRefHeader names, on the copy of an HTTP request the SDK reads, the
// request's own entry in liveRequests. Whatever a client sends under that
// name is replaced.
const requestRefHeader = "Subako-Internal-Request-Ref"

// liveRequests are the endpoint's HTTP requests in flight: ref → their context.
var liveRequests sync.Map

// markRequest lets the messages of req find its HTTP context (an older
// protocol's handler context outlives the HTTP request); done forgets it.
func markRequest(req *http.Request) (*http.Request, func()) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	ref := hex.EncodeToString(b[:])
	req = req.Clone(req.Context())
	req.Header.Set(requestRefHeader, ref)
	liveRequests.Store(ref, req.Context())
	return req, func() { liveRequests.Delete(ref) }
}

// callWatch follows one tools/call: its context ends with the message's or
// the HTTP request's, and it reports progress when the client asked for it.
type callWatch struct {
	ctx    context.Context
	cancel context.CancelFunc
	sink   *runtime.ProgressSink
	m      *MCP
	done   chan struct{} // the progress loop has ended
}

// watchCall starts following a tools/call. Call stop when it returns.
func (m *MCP) watchCall(ctx context.Context, req *mcp.CallToolRequest) *callWatch {
	token := req.Params.GetProgressToken()
	w := &callWatch{m: m, sink: runtime.NewCallSink()}
	if token != nil {
		w.sink = runtime.NewProgressSink()
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		if httpCtx, ok := liveRequests.Load(extra.Header.Get(requestRefHeader)); ok {
			stop := context.AfterFunc(httpCtx.(context.Context), w.cancel)
			context.AfterFunc(w.ctx, func() { stop() })
		}
	}
	w.ctx = runtime.WithProgressSink(w.ctx, w.sink)
	if token != nil && req.Session != nil {
		w.done = make(chan struct{})
		go w.report(ctx, req.Session, token)
	}
	return w
}

// report sends the call's progress to the client until the call's
// context ends. Writing to a slow client blocks this loop only, never the
// call: the sink drops what does not fit.
func (w *callWatch) report(reqCtx context.Context, ss *mcp.ServerSession, token any) {
	defer close(w.done)
	// Calls' events only; which call is this one's is asked below, not in
	// the filter, which runs under the events' lock (sink.Call locks).
	events, unsubscribe := w.m.h.RT.Subscribe(func(e runtime.Event) bool { return e.Kind == "call" })
	defer unsubscribe()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	var (
		status   string
		count    float64
		upstream *runtime.Progress // the last the server sent
		last     time.Time
	)
	send := func(p runtime.Progress) {
		last = time.Now()
		// The request's own context routes the notification to its stream.
		_ = ss.NotifyProgress(reqCtx, &mcp.ProgressNotificationParams{ProgressToken: token,
			Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
	heartbeat := func() {
		msg := progressMessage(status)
		if msg == "" {
			return
		}
		if upstream != nil {
			// The server's own count stands; only the words say we wait.
			send(runtime.Progress{Progress: upstream.Progress, Total: upstream.Total, Message: msg})
			return
		}
		count++
		send(runtime.Progress{Progress: count, Message: msg})
	}
	for {
		select {
		case <-w.ctx.Done():
			// What the server reported just before its answer still goes
			// out, before the result. The SDK's client hands a notification
			// to its handler beside, not before, the answer it preceded, so
			// while the server's count is short of its total the last report
			// may still be on its way: wait for it, at most lateProgressWait.
			var grace <-chan time.Time
			for {
				select {
				case p := <-w.sink.C():
					upstream = &p
					send(p)
					continue
				default:
				}
				if upstream == nil || upstream.Total == 0 || upstream.Progress >= upstream.Total {
					return
				}
				if grace == nil {
					t := time.NewTimer(lateProgressWait)
					defer t.Stop()
					grace = t.C
				}
				select {
				case p := <-w.sink.C():
					upstream = &p
					send(p)
				case <-grace:
					return
				}
			}
		case p := <-w.sink.C():
			upstream = &p
			send(p)
		case e, open := <-events:
			if !open {
				return
			}
			if e.Kind == "call" && e.ID != "" && e.ID == w.sink.Call() && e.State != status {
				status = e.State
				heartbeat()
			}
			if e.Resync() {
				// Events were lost: the call's status is read again.
				if id := w.sink.Call(); id != "" {
					if st, err := w.m.h.RT.CallStatus(w.ctx, id); err == nil && st != status {
						status = st
						heartbeat()
					}
				}
			}
		case <-tick.C:
			if status == "" {
				// The recording event may have been missed (a full subscriber).
				if id := w.sink.Call(); id != "" {
					if st, err := w.m.h.RT.CallStatus(w.ctx, id); err == nil {
						status = st
					}
				}
			}
			if time.Since(last) >= progressEvery-time.Second {
				heartbeat()
			}
		}
	}
}

// progressMessage is what a waiting client reads for a call's status.
func progressMessage(status string) string {
	switch status {
	case runtime.CallAwaitingApproval:
		return "waiting for an approver"
	case runtime.CallQueued, runtime.CallRunning:
		return "running"
	case runtime.CallWaitingClient:
		return "waiting for the client's answer"
	}
	return ""
}

// stop ends the watch: the progress loop first (nothing is sent after the
// result), then the sink.
func (w *callWatch) stop() {
	w.cancel()
	if w.done != nil {
		select {
		case <-w.done:
		case <-time.After(2 * time.Second): // a write stuck on a slow client
		}
	}
	w.sink.Close()
}

// gone reports whether the request ended before the call: the client
// cancelled it or went away.
func (w *callWatch) gone() bool { return w.ctx.Err() != nil }

// cancelOpen cancels the call the client no longer waits for, as its caller.
// A call that finished meanwhile stays as it is.
func (w *callWatch) cancelOpen(p runtime.Principal, call runtime.ToolCallView) runtime.ToolCallView {
	id := call.ID
	if id == "" {
		id = w.sink.Call()
	}
	if id == "" || (call.ID != "" && !call.Open()) {
		return call
	}
	ctx := context.WithoutCancel(w.ctx)
	if v, err := w.m.h.RT.ToolCallCancel(ctx, p, id, "the client cancelled its request or went away"); err == nil {
		return v
	}
	return call
}
