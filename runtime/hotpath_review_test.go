package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/tools"
)

// skillSession is a session whose one tool reads a skill's file: no server needed.
func skillSession(t *testing.T, db *models.DB) (*Runtime, Principal, SessionView) {
	t.Helper()
	ctx := t.Context()
	r := New(db, Options{})
	t.Cleanup(r.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := r.UserCreate(ctx, System, "owner@example.com", "owner", "correct-horse-battery")
	must(err)
	owner, err := r.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	_, err = r.SkillCreate(ctx, owner, SkillInput{Name: "policy", Files: []SkillFileInput{{Path: "refunds.md", Content: "Refunds within 30 days."}}})
	must(err)
	name := "reviewed"
	a, err := r.AgentCreate(ctx, owner, AgentInput{Name: &name})
	must(err)
	cfg, _ := json.Marshal(map[string]any{"skills": []any{map[string]any{"name": "policy", "skill": "policy"}}})
	ver, err := r.VersionCreate(ctx, owner, VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = r.VersionPublish(ctx, owner, ver.ID)
	must(err)
	s, err := r.SessionCreate(ctx, owner, SessionCreateInput{Version: ver.ID})
	must(err)
	return r, owner, s
}

type raceMarker struct{}

// A call arriving while Session.end's transaction is between its write of
// the session and its commit reads the session still active, and the cache
// of sessions must not keep that answer: the next call, after Session.end
// has returned, is refused.
func TestHotSessionNotKeptFromAReadBeforeTheEndCommitted(t *testing.T) {
	db := modelstest.Open(t)
	r, owner, s := skillSession(t, db)
	ctx := t.Context()
	sp := SessionPrincipal(s.ID, "")
	wait := 10.0
	read := func() (ToolCallView, error) {
		return r.ToolCallCreate(ctx, sp, ToolCallInput{Session: s.ID, Tool: "skill__policy__read", Input: json.RawMessage(`{"path":"refunds.md"}`), WaitSeconds: &wait})
	}
	if c, err := read(); err != nil || c.Status != CallSucceeded {
		t.Fatalf("a read in the active session: %v %+v", err, c)
	}
	raced := false
	err := db.Callback().Update().Before("gorm:update").Register("test:session_end_race", func(tx *gorm.DB) {
		if raced || tx.Statement.Context.Value(raceMarker{}) == nil || tx.Statement.Table != "approvals" {
			return
		}
		raced = true
		// Session.end has written the session's row (its second statement
		// is this one) and not committed: a call of the session comes in.
		if _, err := r.hotSession(context.Background(), sp, s.ID); err != nil {
			t.Errorf("the racing read: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SessionEnd(context.WithValue(ctx, raceMarker{}, true), owner, s.ID); err != nil {
		t.Fatal(err)
	}
	if !raced {
		t.Fatal("Session.end no longer updates approvals in its transaction: the test does not test the race")
	}
	c, err := read()
	if err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("a call after Session.end returned ran in the ended session from a cached row: %v %+v", err, c)
	}
}

// Sessions' offered tools are kept within a byte budget, not only a count:
// 1,000 sessions of a version whose servers list 1 MiB of tools would
// otherwise hold a GiB, each session its own copy.
func TestHotToolsCacheBoundedInBytes(t *testing.T) {
	h := newHotPath()
	schema := json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", 64<<10-40) + `"}`)
	var rep toolsReport
	for range 16 { // 1 MiB of schemas
		rep.all = append(rep.all, offered{Tool: tools.Tool{Name: "mcp__big__t", InputSchema: schema}})
	}
	now := time.Now()
	for i := range hotMaxToolReports {
		h.tools.put(h, fmt.Sprintf("ses_%d", i), h.gen.Load(), now, rep)
	}
	h.tools.mu.Lock()
	kept := len(h.tools.m)
	h.tools.mu.Unlock()
	held := int64(kept) * int64(16*len(schema))
	if held > hotMaxToolBytes {
		t.Fatalf("%d sessions' reports of 1 MiB each kept: %d MiB, more than the %d MiB budget", kept, held>>20, hotMaxToolBytes>>20)
	}
	if kept == 0 {
		t.Fatal("no report kept at all")
	}
	if _, ok := h.tools.get(h, fmt.Sprintf("ses_%d", hotMaxToolReports-1), now); !ok {
		t.Fatal("the report put last is not kept")
	}
}

// Parsed input schemas are kept within a budget of their JSON's bytes: a
// resolved schema takes about 100 times its JSON, so 4,096 schemas of
// 64 KiB (a server may list such) would hold gigabytes.
func TestResolvedSchemasBoundedInBytes(t *testing.T) {
	resolvedSchemas.Clear()
	resolvedSchemasN.Store(0)
	t.Cleanup(resolvedSchemas.Clear)
	const size = 64 << 10
	for i := range 200 {
		raw := fmt.Sprintf(`{"type":"object","description":"%d %s"}`, i, strings.Repeat("x", size-50))
		resolvedSchema(json.RawMessage(raw))
	}
	kept := 0
	resolvedSchemas.Range(func(any, any) bool { kept++; return true })
	if kept*size > 4<<20 {
		t.Fatalf("%d schemas of 64 KiB kept (%d MiB of JSON, some 100 times that parsed)", kept, kept*size>>20)
	}
}

// A decision and its Action are one transaction: a crash (here a panic)
// while the decision's Action is written leaves the approval undecided,
// never a call approved with no decision on the audit log.
func TestApprovalDecisionAndItsActionCommitTogether(t *testing.T) {
	db := modelstest.Open(t)
	ctx := t.Context()
	r := New(db, Options{})
	t.Cleanup(r.Close)
	r.SetFunctionRunner(func(context.Context, FunctionCall) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
	manifest := `{"name":"github","version":"1.0.0","tools":[{"name":"get_repo","description":"Read a repository","input_schema":{"type":"object"}}]}`
	if err := db.Create(&models.FunctionPackage{ID: "fp_rev", Name: "github", Version: "1.0.0", Manifest: manifest,
		WasmSHA256: "00", WasmSize: 1, CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	name := "asks"
	ag, err := r.AgentCreate(ctx, System, AgentInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"functions": [{"name": "gh", "package": "github", "version": "1.0.0", "default_policy": "ask"}]}`
	v, err := r.VersionCreate(ctx, System, VersionCreateInput{Agent: ag.ID, Config: json.RawMessage(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.VersionPublish(ctx, System, v.ID); err != nil {
		t.Fatal(err)
	}
	s, err := r.SessionCreate(ctx, System, SessionCreateInput{Version: v.ID})
	if err != nil {
		t.Fatal(err)
	}
	wait := 0.0
	c, err := r.ToolCallCreate(ctx, SessionPrincipal(s.ID, ""), ToolCallInput{Session: s.ID, Tool: "fn__gh__get_repo", Input: json.RawMessage(`{}`), WaitSeconds: &wait})
	if err != nil || c.Status != CallAwaitingApproval || c.Approval == nil {
		t.Fatalf("the ask-first call: %v %+v", err, c)
	}
	err = db.Callback().Create().Before("gorm:create").Register("test:crash_on_decision_action", func(tx *gorm.DB) {
		if rec, ok := tx.Statement.Dest.(*models.Action); ok && rec.Verb == "Approval.approve" && tx.Statement.Context.Value(raceMarker{}) != nil {
			panic("the server dies here")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = r.ApprovalApprove(context.WithValue(ctx, raceMarker{}, true), System, DecisionInput{Approval: c.Approval.ID})
	}()
	var ap models.Approval
	if err := db.First(&ap, "id = ?", c.Approval.ID).Error; err != nil {
		t.Fatal(err)
	}
	var actions int64
	db.Model(&models.Action{}).Where("verb = ?", "Approval.approve").Count(&actions)
	if ap.State != ApprovalPending && actions == 0 {
		t.Fatalf("the approval is %s and the call queued to run, with no Approval.approve Action", ap.State)
	}
}

// A session that ends after a call's check of it and before the call is
// recorded does not run that call: it is refused as Session.end refused
// the session's other open calls.
func TestCallRecordedJustAfterItsSessionEndedIsRefused(t *testing.T) {
	db := modelstest.Open(t)
	r, owner, s := skillSession(t, db)
	ctx := t.Context()
	raced := false
	err := db.Callback().Query().Before("gorm:query").Register("test:end_during_call", func(tx *gorm.DB) {
		if raced || tx.Statement.Context.Value(raceMarker{}) == nil || tx.Statement.Table != "versions" {
			return
		}
		raced = true
		// The call has found its session active and is resolving its tools.
		if _, err := r.SessionEnd(context.Background(), owner, s.ID); err != nil {
			t.Errorf("Session.end: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	wait := 10.0
	c, err := r.ToolCallCreate(context.WithValue(ctx, raceMarker{}, true), SessionPrincipal(s.ID, ""),
		ToolCallInput{Session: s.ID, Tool: "skill__policy__read", Input: json.RawMessage(`{"path":"refunds.md"}`), WaitSeconds: &wait})
	if !raced {
		t.Fatal("the call did not read its version: the test does not test the race")
	}
	if err == nil && c.Status != CallRefused {
		t.Fatalf("a call recorded after its session ended ran: %+v", c)
	}
	var rec models.ToolCall
	if err := db.First(&rec, "session_id = ?", s.ID).Error; err == nil && rec.Status != CallRefused {
		t.Fatalf("the call's record says %s, not refused", rec.Status)
	}
}
