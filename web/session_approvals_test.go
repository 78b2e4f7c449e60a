package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
)

// TestSessionPageListsItsOwnApprovalBehindManyOthers: more than one read's
// worth of approvals waiting in another session, all older, must not push a
// session's own approval off its page; and an approval past its expiry that
// the reaper has not reached yet can no longer be decided, so it is not listed.
func TestSessionPageListsItsOwnApprovalBehindManyOthers(t *testing.T) {
	w := newWorld(t, everythingConfig)
	owner := w.browserOf()
	busy, mine := w.session(w.vault), w.session(w.vault)
	now := w.clock.Now()

	const others = 510
	calls, aps := make([]models.ToolCall, 0, others+1), make([]models.Approval, 0, others+1)
	add := func(id, session string, created, expires time.Time) {
		calls = append(calls, models.ToolCall{ID: "call_" + id, SessionID: session, VersionID: w.version, Tool: getEnv,
			Kind: "mcp", GrantName: "everything", ToolName: "get-env", Input: "{}", Status: runtime.CallAwaitingApproval,
			Verdict: "ask", PolicySource: "default", Model: "test-model", ByKind: "session", ByLabel: "agent", CreatedAt: created})
		aps = append(aps, models.Approval{ID: "apr_" + id, ToolCallID: "call_" + id, SessionID: session, AgentID: w.agent, Tool: getEnv, GrantName: "everything",
			State: runtime.ApprovalPending, CreatedAt: created, ExpiresAt: expires})
	}
	for i := range others {
		add(fmt.Sprintf("busy%04d", i), busy.ID, now.Add(-time.Hour).Add(time.Duration(i)*time.Millisecond), now.Add(time.Hour))
	}
	add("stale", mine.ID, now.Add(-2*time.Hour), now.Add(-time.Minute))
	db := w.rt.DB()
	if err := db.CreateInBatches(calls, 100).Error; err != nil {
		t.Fatalf("insert calls: %v", err)
	}
	if err := db.CreateInBatches(aps, 100).Error; err != nil {
		t.Fatalf("insert approvals: %v", err)
	}

	_, c := w.call(mine.Token, mine.ID, getEnv, map[string]any{}, 0)
	if c.Status != runtime.CallAwaitingApproval || c.Approval == nil {
		t.Fatalf("the session's own call did not ask first: %+v", c)
	}
	// The whole queue's first page is the other session's: ours is behind it.
	if first := w.pending(w.owner, "limit=500", 500); first[0].Session != busy.ID || first[499].Session != busy.ID {
		t.Fatalf("the queue's first 500 are not the other session's: %+v ... %+v", first[0], first[499])
	}

	body := mustGet(owner, "/sessions/"+mine.ID)
	if !strings.Contains(body, `data-approval="`+c.Approval.ID+`"`) {
		t.Fatalf("the session's own pending approval is not on its page:\n%s", body)
	}
	if n := countTestID(body, "pending-approval"); n != 1 || strings.Contains(body, `data-approval="apr_stale"`) {
		t.Fatalf("the session page lists %d approvals (want only its own, not the expired one):\n%s", n, body)
	}
}
