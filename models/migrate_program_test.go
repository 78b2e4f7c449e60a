package models_test

import (
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// Migration 0032 gives calls already made inside a program the program's
// Action, read from their ToolCall.create Action's parent; other calls,
// and other verbs' Actions with a parent, leave a call without one.
func TestCallProgramMigrationBackfills(t *testing.T) {
	db := modelstest.Open(t)
	for _, stmt := range []string{`ALTER TABLE tool_calls DROP COLUMN program`, `DELETE FROM schema_migrations WHERE version = 32`} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	seedSession(t, db)
	call := func(id string) error {
		c := models.ToolCall{ID: id, SessionID: "ses_bench", VersionID: "ver_bench", Tool: "mcp__everything__echo", Kind: "mcp", GrantName: "everything",
			ToolName: "echo", Input: "{}", Status: "succeeded", Verdict: "allow", ByKind: "session", ByID: "ses_bench", ByLabel: "session ses_bench", CreatedAt: now}
		return db.Omit("Program").Create(&c).Error
	}
	action := func(id, verb, targets, parent string) error {
		return db.Create(&models.Action{ID: id, Verb: verb, ByKind: "session", ByID: "ses_bench", ByLabel: "session ses_bench",
			Targets: targets, Verdict: "allowed", ParentID: parent, CreatedAt: now}).Error
	}
	for _, err := range []error{
		call("call_inprogram"), call("call_flat"), call("call_other"),
		action("act_prog", "Program.run", "ses_bench", ""),
		action("act_c1", "ToolCall.create", "ses_bench call_inprogram", "act_prog"),
		action("act_c2", "ToolCall.create", "ses_bench call_flat", ""),
		// Another verb's Action inside a program, naming a call: not the call's own.
		action("act_c3", "ToolCall.cancel", "ses_bench call_other", "act_prog"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ran, err := db.Migrate(); err != nil || len(ran) != 1 || ran[0] != 32 {
		t.Fatalf("migrate: %v %v", ran, err)
	}
	for id, want := range map[string]string{"call_inprogram": "act_prog", "call_flat": "", "call_other": ""} {
		var c models.ToolCall
		if err := db.First(&c, "id = ?", id).Error; err != nil {
			t.Fatal(err)
		}
		if c.Program != want {
			t.Errorf("%s: program %q, want %q", id, c.Program, want)
		}
	}
}
