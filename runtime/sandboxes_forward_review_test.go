package runtime

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime/tools"
)

// An exec forwarded to a replica that no longer holds the sandbox (another
// took it over after the sender read the record) is sent back as moved, so
// the sender forwards it to the new owner; it never runs in a stale
// machine left on the old owner.
func TestForwardedExecForASandboxTakenOverIsSentBack(t *testing.T) {
	db, rts := replicasOnPostgres(t, "rep-a", "rep-b")
	a := rts[0]
	ctx := context.Background()
	now := time.Now().UTC()
	lease := now.Add(SandboxLeaseTTL)
	if err := db.Create(&models.Sandbox{ID: "sbx_moved", SessionID: "ses_moved", GrantName: "workbench", State: "running",
		ReplicaID: "rep-b", LeaseExpiresAt: &lease, StartedAt: &now}).Error; err != nil {
		t.Fatal(err)
	}
	_, err := a.ForwardedExec(ctx, "ToolCall.create", SandboxExec{SessionID: "ses_moved", Grant: tools.Sandbox{Name: "workbench"},
		Input: json.RawMessage(`{"command":"true"}`)})
	re, ok := AsError(err)
	if !ok || re.Code != "sandbox_moved" {
		t.Fatalf("forwarded exec on a replica that lost the sandbox: %v; want sandbox_moved", err)
	}
	if !forwardable(err) {
		t.Errorf("the sender would not look the owner up again after %v", err)
	}
}
