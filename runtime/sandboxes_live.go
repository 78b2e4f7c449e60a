package runtime

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/subako/subako/runtime/mcpclient"
	"github.com/subako/subako/runtime/sandbox"
)

// An exec's output as it happens (issue 16 item 8). The agent sends chunks
// while the command runs (bounded there: sandbox.LiveChunkBytes every
// 250 ms a stream, sandbox.LiveMaxBytes a stream); here each goes to the
// MCP client waiting on the call as progress notifications (messages of
// at most mcpclient.MaxProgressMessage bytes, stderr's prefixed
// "stderr: "), and the call's last LiveTailBytes are kept in memory for
// the session page, which an event ("call_output") tells to re-read at most
// every liveEventEvery. The call's result is unchanged.
const (
	LiveTailBytes  = 16 << 10
	liveEventEvery = 250 * time.Millisecond
	// liveProgressBytes bounds what one call sends as progress in all.
	liveProgressBytes = 256 << 10
)

// LiveOutput is a running exec's output so far, for the session page.
type LiveOutput struct {
	CallID    string
	Grant     string
	Command   string
	Text      string // the last LiveTailBytes
	Bytes     int64  // everything printed so far
	Cut       bool   // Text starts after the beginning
	StartedAt time.Time
}

type liveCall struct {
	sessionID string
	seq       uint64 // the order execs started in (the clock may stand still)
	mu        sync.Mutex
	out       LiveOutput
	tail      []byte
	progress  float64 // bytes relayed as progress
	published time.Time
	pending   *time.Timer
	ended     bool
}

// liveCalls are the execs in flight by call id.
var (
	liveCalls sync.Map // call id → *liveCall
	liveSeq   atomic.Uint64
)

// liveExec has the exec of call e report its output as it comes; done
// forgets it (the page drops its panel).
func (r *Runtime) liveExec(ctx context.Context, e SandboxExec, command string) (context.Context, func()) {
	if e.CallID == "" {
		return ctx, func() {}
	}
	lc := &liveCall{sessionID: e.SessionID, seq: liveSeq.Add(1), out: LiveOutput{CallID: e.CallID, Grant: e.Grant.Name,
		Command: clipRunes(command, 200), StartedAt: r.now()}}
	liveCalls.Store(e.CallID, lc)
	ctx = sandbox.WithOutput(ctx, func(stream string, data []byte) { r.liveChunk(e.CallID, lc, stream, data) })
	return ctx, func() {
		lc.mu.Lock()
		lc.ended = true
		if lc.pending != nil {
			lc.pending.Stop()
		}
		lc.mu.Unlock()
		liveCalls.CompareAndDelete(e.CallID, lc)
		r.publish(Event{Kind: "call_output", ID: e.CallID, SessionID: e.SessionID})
	}
}

func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// liveChunk takes one chunk: never blocks (it runs on the agent
// connection's reading goroutine).
func (r *Runtime) liveChunk(callID string, lc *liveCall, stream string, data []byte) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.ended {
		return
	}
	lc.out.Bytes += int64(len(data))
	text := data
	if stream == "stderr" {
		text = append([]byte("stderr: "), data...)
	}
	lc.tail = append(lc.tail, data...)
	if over := len(lc.tail) - LiveTailBytes; over > 0 {
		cut := over
		for cut < len(lc.tail) && !utf8.RuneStart(lc.tail[cut]) {
			cut++
		}
		lc.tail = append(lc.tail[:0], lc.tail[cut:]...)
		lc.out.Cut = true
	}
	if s, ok := progressSinks.Load(callID); ok {
		for len(text) > 0 && lc.progress < liveProgressBytes {
			n := min(len(text), mcpclient.MaxProgressMessage)
			for n < len(text) && n > 1 && !utf8.RuneStart(text[n]) {
				n--
			}
			lc.progress += float64(n)
			s.(*ProgressSink).send(Progress{Progress: lc.progress, Message: string(text[:n])})
			text = text[n:]
		}
	}
	// The page re-reads at most every liveEventEvery; the last chunk's
	// event waits for the window's end.
	if wait := liveEventEvery - time.Since(lc.published); wait <= 0 {
		lc.published = time.Now()
		r.publish(Event{Kind: "call_output", ID: callID, SessionID: lc.sessionID})
	} else if lc.pending == nil {
		lc.pending = time.AfterFunc(wait, func() {
			lc.mu.Lock()
			lc.pending = nil
			lc.published = time.Now()
			lc.mu.Unlock()
			r.publish(Event{Kind: "call_output", ID: callID, SessionID: lc.sessionID})
		})
	}
}

// maxLiveShown bounds the execs a session page shows live.
const maxLiveShown = 8

// SessionLiveOutput is the output so far of the session's execs in
// flight, oldest first, for someone who may see the session's calls.
func (r *Runtime) SessionLiveOutput(p Principal, sessionID string) []LiveOutput {
	if !p.Can("ToolCall.list") {
		return nil
	}
	var out []LiveOutput
	var seqs []uint64
	liveCalls.Range(func(_, v any) bool {
		lc := v.(*liveCall)
		if lc.sessionID != sessionID {
			return true
		}
		lc.mu.Lock()
		o := lc.out
		o.Text = string(lc.tail)
		lc.mu.Unlock()
		out = append(out, o)
		seqs = append(seqs, lc.seq)
		return true
	})
	sort.Sort(bySeq{out, seqs})
	if len(out) > maxLiveShown {
		out = out[:maxLiveShown]
	}
	return out
}

// bySeq sorts live outputs by the order their execs started.
type bySeq struct {
	out  []LiveOutput
	seqs []uint64
}

func (b bySeq) Len() int           { return len(b.out) }
func (b bySeq) Less(i, j int) bool { return b.seqs[i] < b.seqs[j] }
func (b bySeq) Swap(i, j int) {
	b.out[i], b.out[j] = b.out[j], b.out[i]
	b.seqs[i], b.seqs[j] = b.seqs[j], b.seqs[i]
}
