package runtime

import (
	"context"
	"sync"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/mcpclient"
)

// Progress is one progress report of a call for the client waiting on it:
// an upstream MCP server's own notification, passed on as it came.
type Progress = mcpclient.Progress

// ProgressSink receives the upstream progress of one call for the request
// waiting on it (the MCP endpoint, for a client that sent a progressToken).
// It is bounded: when the client reads slower than the server reports, the
// newest reports are dropped rather than the call slowed.
type ProgressSink struct {
	ch     chan Progress
	mu     sync.Mutex
	closed bool
	call   string
	relay  bool // false: only follows its call (NewCallSink)
}

// progressSinkSize is how many reports a sink holds for a slow reader.
const progressSinkSize = 64

// NewProgressSink makes a sink; close it when the request ends.
func NewProgressSink() *ProgressSink {
	return &ProgressSink{ch: make(chan Progress, progressSinkSize), relay: true}
}

// NewCallSink makes a sink that only learns its call's id (Call): for a
// request that wants no progress, no upstream progress is asked for.
func NewCallSink() *ProgressSink { return &ProgressSink{ch: make(chan Progress)} }

// C is where the reports arrive.
func (s *ProgressSink) C() <-chan Progress { return s.ch }

// send never blocks.
func (s *ProgressSink) send(p Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.relay {
		return
	}
	select {
	case s.ch <- p:
	default:
	}
}

// Close stops the reports and forgets the sink's call.
func (s *ProgressSink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.call != "" {
		progressSinks.CompareAndDelete(s.call, s)
	}
}

type progressSinkKey struct{}

// WithProgressSink has ToolCall.create attach sink to the call it records.
func WithProgressSink(ctx context.Context, sink *ProgressSink) context.Context {
	return context.WithValue(ctx, progressSinkKey{}, sink)
}

// progressSinks are the sinks of calls in flight, by call id: an ask-first
// call runs from the approver's request, not its caller's, so the sink is
// found by the call rather than carried in a context.
var progressSinks sync.Map // call id → *ProgressSink

// attachProgress registers the sink ctx carries, if any, for the call.
func attachProgress(ctx context.Context, callID string) {
	sink, ok := ctx.Value(progressSinkKey{}).(*ProgressSink)
	if !ok || sink == nil {
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.closed || sink.call != "" {
		return
	}
	sink.call = callID
	progressSinks.Store(callID, sink)
}

// withUpstreamProgress asks the upstream server for progress when someone
// waits for this call's; each report goes to the sink that is there then.
func withUpstreamProgress(ctx context.Context, callID string) context.Context {
	if s, ok := progressSinks.Load(callID); !ok || !s.(*ProgressSink).relay {
		return ctx
	}
	return mcpclient.WithProgress(ctx, func(p mcpclient.Progress) {
		if s, ok := progressSinks.Load(callID); ok {
			s.(*ProgressSink).send(p)
		}
	})
}

// Call is the id of the call the sink is attached to ("" until ToolCall.create records it).
func (s *ProgressSink) Call() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.call
}

// CallStatus is a call's status, for the endpoint that made it and reports
// its progress: not an Action (it is read every few seconds while a call
// waits), and the id comes from the endpoint's own sink, never from a client.
func (r *Runtime) CallStatus(ctx context.Context, id string) (string, error) {
	var status string
	err := r.db.WithContext(ctx).Model(&models.ToolCall{}).Where("id = ?", id).Pluck("status", &status).Error
	return status, err
}
