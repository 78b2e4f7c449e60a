package runtime_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// askSession is a session on a published version whose one function tool
// asks first, with a function runner that answers at once: what is measured
// is the platform's own cost of asking, telling and answering.
func askSession(b *testing.B) (*runtime.Runtime, runtime.Principal) {
	b.Helper()
	db := modelstest.Open(b)
	rt := runtime.New(db, runtime.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.Cleanup(rt.Close)
	rt.SetFunctionRunner(func(context.Context, runtime.FunctionCall) (json.RawMessage, error) {
		return json.RawMessage(`{"stars": 42}`), nil
	})
	manifest := `{"name":"github","version":"1.0.0","tools":[{"name":"get_repo","description":"Read a repository","input_schema":{"type":"object"}}]}`
	if err := db.Create(&models.FunctionPackage{ID: "fp_bench", Name: "github", Version: "1.0.0", Manifest: manifest,
		WasmSHA256: "00", WasmSize: 1, CreatedAt: time.Now()}).Error; err != nil {
		b.Fatal(err)
	}
	ctx, name := b.Context(), "bench"
	ag, err := rt.AgentCreate(ctx, runtime.System, runtime.AgentInput{Name: &name})
	if err != nil {
		b.Fatal(err)
	}
	cfg := `{"functions": [{"name": "gh", "package": "github", "version": "1.0.0", "default_policy": "ask"}]}`
	v, err := rt.VersionCreate(ctx, runtime.System, runtime.VersionCreateInput{Agent: ag.ID, Config: json.RawMessage(cfg)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rt.VersionPublish(ctx, runtime.System, v.ID); err != nil {
		b.Fatal(err)
	}
	s, err := rt.SessionCreate(ctx, runtime.System, runtime.SessionCreateInput{Version: v.ID, Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return rt, runtime.SessionPrincipal(s.ID, s.Title)
}

func callInput(p runtime.Principal, wait float64) runtime.ToolCallInput {
	return runtime.ToolCallInput{Session: p.SessionID, Tool: "fn__gh__get_repo", Input: json.RawMessage(`{"repo": "subako"}`),
		Model: "bench", WaitSeconds: &wait}
}

// awaitPending returns the call id of the next approval asked, as an
// approver's page learns of it.
func awaitPending(b *testing.B, events <-chan runtime.Event) string {
	for {
		select {
		case ev := <-events:
			if ev.Kind == "approval" && ev.State == runtime.ApprovalPending {
				return ev.ID
			}
		case <-time.After(10 * time.Second):
			b.Fatal("no approval event within 10 s")
		}
	}
}

// BenchmarkApprovalAskedToSubscriber times an ask-first call from the agent's
// request until the approval's event reaches a subscriber (a live page).
func BenchmarkApprovalAskedToSubscriber(b *testing.B) {
	rt, agent := askSession(b)
	events, stop := rt.Subscribe(nil)
	defer stop()
	ctx := b.Context()
	b.ResetTimer()
	for range b.N {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := rt.ToolCallCreate(ctx, agent, callInput(agent, 0)); err != nil {
				b.Error(err)
			}
		}()
		awaitPending(b, events)
		// The agent's request still answers and records its Action: not part
		// of the latency, but it must end before the next call (and the database).
		b.StopTimer()
		<-done
		b.StartTimer()
	}
}

// BenchmarkApprovalDecisionToAnswer times a decision from the approver's verb
// until the agent's waiting ToolCall.create returns with the outcome.
func BenchmarkApprovalDecisionToAnswer(b *testing.B) {
	for _, verb := range []string{"approve", "deny"} {
		b.Run(verb, func(b *testing.B) {
			rt, agent := askSession(b)
			events, stop := rt.Subscribe(nil)
			defer stop()
			ctx := b.Context()
			approver := runtime.UserPrincipal("usr_bench", "approver@example.com", runtime.AccessMember)
			b.StopTimer()
			for range b.N {
				answered := make(chan runtime.ToolCallView, 1)
				go func() {
					v, err := rt.ToolCallCreate(ctx, agent, callInput(agent, 30))
					if err != nil {
						b.Error(err)
					}
					answered <- v
				}()
				call := awaitPending(b, events)
				v, err := rt.ToolCallGet(ctx, runtime.System, call)
				if err != nil {
					b.Fatal(err)
				}
				in := runtime.DecisionInput{Approval: v.Approval.ID, Reason: "bench"}
				b.StartTimer()
				if verb == "approve" {
					_, err = rt.ApprovalApprove(ctx, approver, in)
				} else {
					_, err = rt.ApprovalDeny(ctx, approver, in)
				}
				got := <-answered
				b.StopTimer()
				if err != nil || got.Open() {
					b.Fatalf("%s: %v, the call is %s", verb, err, got.Status)
				}
			}
		})
	}
}
