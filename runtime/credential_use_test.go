package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/subako/subako/runtime"
)

// Using a credential marks when it was last used and leaves when it was last
// updated alone: an operator reads "Updated" to know when a secret rotated.
func TestCredentialUseKeepsUpdatedAt(t *testing.T) {
	rt, p, session, _ := benchSession(t)
	owner, err := rt.PrincipalForEmail(t.Context(), "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	vaults, err := rt.VaultList(t.Context(), owner)
	if err != nil || len(vaults) != 1 {
		t.Fatalf("vaults: %v %v", vaults, err)
	}
	before, err := rt.CredentialList(t.Context(), owner, vaults[0].ID)
	if err != nil || len(before) != 1 || before[0].LastUsedAt != nil {
		t.Fatalf("before any call: %+v %v", before, err)
	}
	wait := 10.0
	c, err := rt.ToolCallCreate(t.Context(), p, runtime.ToolCallInput{Session: session, Tool: "mcp__everything__echo",
		Input: json.RawMessage(`{"message":"hi"}`), WaitSeconds: &wait})
	if err != nil || c.Status != runtime.CallSucceeded {
		t.Fatalf("echo: %v %+v", err, c)
	}
	after, err := rt.CredentialList(t.Context(), owner, vaults[0].ID)
	if err != nil || len(after) != 1 {
		t.Fatal(err)
	}
	if after[0].LastUsedAt == nil {
		t.Fatal("a call with the credential did not mark it used")
	}
	if !after[0].UpdatedAt.Equal(before[0].UpdatedAt) {
		t.Fatalf("using the credential moved its updated time from %v to %v", before[0].UpdatedAt, after[0].UpdatedAt)
	}
}
