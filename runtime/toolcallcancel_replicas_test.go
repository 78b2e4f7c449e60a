package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
)

// Two replicas on one PostgreSQL database: a long MCP call (server-
// everything's trigger-long-running-operation) runs on A; ToolCall.cancel
// through B stops it on A at once (B's call event crosses with NOTIFY and
// A cancels the call's context), the record says cancelled with one
// ToolCall.cancel Action, and A's caller gets the cancelled answer. A
// cancel of a call whose replica is dead is recorded the same way, and
// the reaper does not also mark it interrupted.
func TestCancelThroughOneReplicaStopsTheCallOnAnother(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.Postgres {
		t.Skip("replicas share PostgreSQL only")
	}
	a, p, session, _ := benchSessionOn(t, db)
	b := runtime.New(db, runtime.Options{AllowPrivateEgress: true, ReplicaID: "rep-b"})
	t.Cleanup(b.Close)
	ctx := t.Context()
	a.Start(ctx, time.Second)
	b.Start(ctx, time.Second)
	for !a.EventsConnected() || !b.EventsConnected() {
		time.Sleep(20 * time.Millisecond)
	}

	type answer struct {
		v   runtime.ToolCallView
		err error
	}
	got := make(chan answer, 1)
	go func() {
		wait := 90.0
		v, err := a.ToolCallCreate(ctx, p, runtime.ToolCallInput{Session: session, Tool: "mcp__everything__trigger-long-running-operation",
			Input: json.RawMessage(`{"duration": 60, "steps": 60}`), WaitSeconds: &wait})
		got <- answer{v, err}
	}()
	var call string
	for deadline := time.Now().Add(30 * time.Second); call == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		db.Raw("SELECT id FROM tool_calls WHERE session_id = ? AND status = 'running'", session).Scan(&call)
	}
	if call == "" {
		t.Fatal("the long call never ran on A")
	}
	v, err := b.ToolCallCancel(ctx, p, call, "changed my mind")
	if err != nil || !v.Cancelled() {
		t.Fatalf("B's cancel: %v %+v", err, v)
	}
	select {
	case ans := <-got:
		if ans.err != nil || !ans.v.Cancelled() || ans.v.Status != runtime.CallFailed || !strings.Contains(ans.v.Reason, "changed my mind") {
			t.Fatalf("A's caller got %v %s %q", ans.err, ans.v.Status, ans.v.Reason)
		}
	case <-time.After(15 * time.Second):
		// Unstopped, the call would run until the MCP call's 30 s timeout.
		t.Fatal("A's caller had no answer 15 s after B cancelled the call: it still runs on A")
	}
	count := func(verb, id string) (n int64) {
		db.Model(&models.Action{}).Where("verb = ? AND targets LIKE ?", verb, "%"+id+"%").Count(&n)
		return n
	}
	if n := count("ToolCall.cancel", call); n != 1 {
		t.Errorf("the call has %d ToolCall.cancel Actions, want 1", n)
	}

	// The replica running a call is dead: the cancel is recorded at once
	// (nothing runs it any more), and the reaper leaves it cancelled.
	now := time.Now().UTC()
	var sess models.Session
	db.First(&sess, "id = ?", session)
	if err := db.Create(&models.ToolCall{ID: "call_on_dead", SessionID: session, VersionID: sess.VersionID, Tool: "mcp__everything__echo",
		ByKind: string(p.Kind), ByID: p.ID, Status: runtime.CallRunning, ReplicaID: "rep-dead", CreatedAt: now, StartedAt: &now}).Error; err != nil {
		t.Fatal(err)
	}
	if v, err := b.ToolCallCancel(ctx, p, "call_on_dead", ""); err != nil || !v.Cancelled() {
		t.Fatalf("cancel of a dead replica's call: %v %+v", err, v)
	}
	b.Reap(ctx)
	var c models.ToolCall
	db.First(&c, "id = ?", "call_on_dead")
	if !strings.HasPrefix(c.Reason, runtime.CallCancelledReason) || count("ToolCall.interrupt", "call_on_dead") != 0 || count("ToolCall.cancel", "call_on_dead") != 1 {
		t.Errorf("a dead replica's cancelled call: %s %q, %d interrupt and %d cancel Actions; want cancelled, 0 and 1",
			c.Status, c.Reason, count("ToolCall.interrupt", "call_on_dead"), count("ToolCall.cancel", "call_on_dead"))
	}
}
