package runtime

import (
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// A call approved on a replica that died before it started it (or whose
// write starting it failed) stays queued; the caller waits on it. The
// reaper, on whichever replica holds its lease, starts a call still queued
// well after its approval, once (execute's conditional update).
func TestReaperStartsACallLeftQueuedAfterItsApproval(t *testing.T) {
	db := modelstest.Open(t)
	r, _, sess := skillSession(t, db)
	ctx := t.Context()
	now := r.now()
	long := now.Add(-2 * queuedGrace)
	just := now
	for _, c := range []struct {
		id      string
		decided time.Time
	}{{"call_left", long}, {"call_just", just}} {
		if err := db.Create(&models.ToolCall{ID: c.id, SessionID: sess.ID, VersionID: sess.Version, Tool: "echo", Status: CallQueued,
			ReplicaID: "rep-gone", CreatedAt: c.decided}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Approval{ID: "apr_" + c.id, ToolCallID: c.id, SessionID: sess.ID, State: ApprovalApproved,
			CreatedAt: c.decided, DecidedAt: &c.decided, ExpiresAt: c.decided.Add(time.Hour)}).Error; err != nil {
			t.Fatal(err)
		}
	}
	r.Reap(ctx)
	status := func(id string) string {
		var c models.ToolCall
		db.First(&c, "id = ?", id)
		return c.Status
	}
	deadline := time.Now().Add(10 * time.Second)
	for status("call_left") == CallQueued {
		if time.Now().After(deadline) {
			t.Fatal("a call approved long ago is still queued after the reaper ran: it never runs, its caller waits for ever")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := status("call_just"); got != CallQueued {
		t.Errorf("a call approved just now was started by the reaper (%s): the deciding replica starts it", got)
	}
}
