package mcpclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress is one progress notification of an upstream tool call, as the
// server sent it.
type Progress struct {
	Progress float64
	Total    float64 // 0: the server gave none
	Message  string
}

type progressKey struct{}

// WithProgress asks Call to request progress from the server (a
// progressToken in the call's _meta) and hand each notification to fn. fn is
// called from the session's reading goroutine: it must not block.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// progressRoutes maps the progress tokens of calls in flight to their
// receivers. Tokens are random, so one map serves every pool.
var progressRoutes sync.Map // string → func(Progress)

// progressLinger is how long a call's token is still routed after it returned.
const progressLinger = time.Second

// withProgressToken sets a fresh progress token on params when ctx asks for
// progress; done forgets it once the call has returned.
func withProgressToken(ctx context.Context, params *mcp.CallToolParams) (done func()) {
	fn, ok := ctx.Value(progressKey{}).(func(Progress))
	if !ok || fn == nil {
		return func() {}
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := "subako-" + hex.EncodeToString(b[:])
	params.SetProgressToken(token)
	progressRoutes.Store(token, fn)
	// The SDK hands a notification to its handler after the answer that
	// followed it may already have returned: the route outlives the call
	// a moment, so the server's last report is not lost.
	return func() { time.AfterFunc(progressLinger, func() { progressRoutes.Delete(token) }) }
}

// relayProgress hands a server's progress notification to the call that asked
// for it; a notification for a token no call holds (late, or forged) is dropped.
func relayProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	if fn, ok := progressRoutes.Load(token); ok {
		// A server's message may be as large as an answer; a report is a
		// status line, and a waiting client holds up to a sink's worth.
		fn.(func(Progress))(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: cut(req.Params.Message, MaxProgressMessage)})
	}
}

// MaxProgressMessage bounds the message of a server's progress report
// passed on to the client waiting for the call (longer ones are cut, "…").
const MaxProgressMessage = 1024
