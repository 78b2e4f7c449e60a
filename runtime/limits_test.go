package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// limitWorld is a runtime (or two on one database, as two replicas) with a
// session whose version has two ask-first function grants, workbench and
// other, whose calls cost money.
type limitWorld struct {
	rts     []*Runtime
	db      *models.DB
	session string
}

func newLimitWorld(t *testing.T, replicas int) *limitWorld {
	t.Helper()
	dir, url := modelstest.Fresh(t)
	w := &limitWorld{}
	for i := range replicas {
		db, err := models.Open(dir, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if i == 0 {
			if _, err := db.Migrate(); err != nil {
				t.Fatal(err)
			}
			w.db = db
		}
		rt := New(db, Options{})
		t.Cleanup(rt.Close)
		rt.SetFunctionRunner(func(context.Context, FunctionCall) (json.RawMessage, error) {
			return json.RawMessage(`{"ok": true}`), nil
		})
		w.rts = append(w.rts, rt)
	}
	ctx, rt := t.Context(), w.rts[0]
	manifest := `{"name":"bench","version":"1.0.0","tools":[{"name":"run","description":"Run","input_schema":{"type":"object"}}]}`
	if err := w.db.Create(&models.FunctionPackage{ID: "fp_bench", Name: "bench", Version: "1.0.0", Manifest: manifest,
		WasmSHA256: "00", WasmSize: 1, CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	name := "limited"
	ag, err := rt.AgentCreate(ctx, System, AgentInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"functions": [{"name": "workbench", "package": "bench", "version": "1.0.0", "default_policy": "ask"},
		{"name": "other", "package": "bench", "version": "1.0.0", "default_policy": "ask"}]}`
	v, err := rt.VersionCreate(ctx, System, VersionCreateInput{Agent: ag.ID, Config: json.RawMessage(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.VersionPublish(ctx, System, v.ID); err != nil {
		t.Fatal(err)
	}
	s, err := rt.SessionCreate(ctx, System, SessionCreateInput{Version: v.ID, Title: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	w.session = s.ID
	return w
}

// person makes a viewer holding one more permission directly, with a limit.
func (w *limitWorld) person(t *testing.T, email string, perm models.Permission) Principal {
	t.Helper()
	ctx, rt := t.Context(), w.rts[0]
	if _, _, err := rt.UserCreate(ctx, System, email, AccessViewer, "correct-horse-battery"); err != nil {
		t.Fatal(err)
	}
	var u models.User
	if err := w.db.First(&u, "email = ?", email).Error; err != nil {
		t.Fatal(err)
	}
	perm.ID, perm.HolderKind, perm.HolderID, perm.CreatedAt = newID("perm"), models.HolderUser, u.ID, time.Now()
	if perm.Scope == "" {
		perm.Scope = "*"
	}
	if err := w.db.Create(&perm).Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range w.rts {
		r.auth.reset()
	}
	return rt.principalFor(ctx, u, "")
}

// Fifty goroutines on two replicas of one database call a verb held with a
// limit of 10 a day: exactly 10 are allowed, the other 40 are refused with
// limit_reached saying when it resets, and recorded as refused Actions.
func TestLimitCountIsExactAcrossReplicas(t *testing.T) {
	w := newLimitWorld(t, 2)
	p := w.person(t, "builder@example.com", models.Permission{Verb: "Agent.create", LimitCount: 10, LimitPeriod: "day"})
	var allowed, limited atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("agent-%d", i)
			_, err := w.rts[i%2].AgentCreate(t.Context(), p, AgentInput{Name: &name})
			e, _ := AsError(err)
			switch {
			case err == nil:
				allowed.Add(1)
			case e != nil && e.Code == "limit_reached" && e.Kind == KindTooMany && e.RetryAfter > 0 && e.RetryAfter <= 24*time.Hour:
				limited.Add(1)
			default:
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 10 || limited.Load() != 40 {
		t.Fatalf("%d allowed and %d refused with limit_reached, want 10 and 40", allowed.Load(), limited.Load())
	}
	var refused []models.Action
	w.db.Where("verb = ? AND verdict = ?", "Agent.create", VerdictRefused).Find(&refused)
	if len(refused) != 40 {
		t.Fatalf("%d refused Actions, want 40", len(refused))
	}
	if r := refused[0].Reason; !strings.Contains(r, "limit reached: Agent.create * (direct; 10 a day)") || !strings.Contains(r, "resets at") {
		t.Errorf("refused Action's reason: %q", r)
	}
	var ok models.Action
	w.db.Where("verb = ? AND verdict = ? AND by_id = ?", "Agent.create", VerdictAllowed, p.ID).First(&ok)
	if !strings.Contains(ok.Permission, "10 a day") {
		t.Errorf("allowed Action's permission: %q", ok.Permission)
	}
}

// An input ceiling: an approver who may approve only grant workbench's calls
// is refused on a call of grant other, and approves workbench's.
func TestLimitInputCeilingRefusesAnotherGrantsApproval(t *testing.T) {
	w := newLimitWorld(t, 1)
	rt := w.rts[0]
	approver := w.person(t, "approver@example.com", models.Permission{Verb: "Approval.approve", LimitField: "grant", LimitValues: `["workbench"]`})
	agent := SessionPrincipal(w.session, "limits")
	pending := map[string]string{}
	for _, grant := range []string{"workbench", "other"} {
		wait := 0.0
		c, err := rt.ToolCallCreate(t.Context(), agent, ToolCallInput{Session: w.session, Tool: "fn__" + grant + "__run",
			Input: json.RawMessage(`{}`), WaitSeconds: &wait})
		if err != nil || c.Approval == nil {
			t.Fatalf("ask-first call of %s: %+v %v", grant, c, err)
		}
		pending[grant] = c.Approval.ID
	}
	_, err := rt.ApprovalApprove(t.Context(), approver, DecisionInput{Approval: pending["other"]})
	e, _ := AsError(err)
	if e == nil || e.Code != "limit_reached" || !strings.Contains(e.Detail, `allows only grant workbench, not "other"`) {
		t.Fatalf("approving grant other's call: %v", err)
	}
	if _, err := rt.ApprovalApprove(t.Context(), approver, DecisionInput{Approval: pending["workbench"]}); err != nil {
		t.Fatalf("approving grant workbench's call: %v", err)
	}
	var rec models.Action
	w.db.Where("verb = ? AND verdict = ?", "Approval.approve", VerdictRefused).First(&rec)
	if !strings.Contains(rec.Reason, "limit reached") || !strings.Contains(rec.Targets, pending["other"]) {
		t.Errorf("refused approval's Action: %+v", rec)
	}
}

// A spend ceiling of 1 SC a day: a function call may cost up to 0.6 SC (60 s
// at 0.01 SC), so the first call is allowed and the second refused until
// midnight UTC.
func TestLimitSpendCeilingRefusesPastTheDaysSC(t *testing.T) {
	w := newLimitWorld(t, 1)
	rt := w.rts[0]
	p := w.person(t, "spender@example.com", models.Permission{Verb: "ToolCall.create", LimitSpendSC: 1})
	call := func() error {
		wait := 0.0
		_, err := rt.ToolCallCreate(t.Context(), p, ToolCallInput{Session: w.session, Tool: "fn__workbench__run", Input: json.RawMessage(`{}`), WaitSeconds: &wait})
		return err
	}
	if err := call(); err != nil {
		t.Fatalf("first call: %v", err)
	}
	err := call()
	var e *Error
	if !errors.As(err, &e) || e.Code != "limit_reached" || !strings.Contains(e.Detail, "may cost up to 0.6 SC, more than is left of 1 SC today") {
		t.Fatalf("second call: %v", err)
	}
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if d := midnight.Sub(now) - e.RetryAfter; d < -time.Minute || d > time.Minute {
		t.Errorf("RetryAfter %v, want until midnight UTC (%v)", e.RetryAfter, midnight.Sub(now))
	}
}

func TestPeriodBoundsAreUTC(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 4, 5, 0, time.FixedZone("x", 9*3600)) // 06:04:05 UTC, a Wednesday
	for _, c := range []struct{ period, start, next string }{
		{PeriodHour, "2026-12-02T06:00:00Z", "2026-12-02T07:00:00Z"},
		{PeriodDay, "2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z"},
		{PeriodWeek, "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"},
		{PeriodMonth, "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
	} {
		s, n, err := periodBounds(c.period, at)
		if err != nil || s.Format(time.RFC3339) != c.start || n.Format(time.RFC3339) != c.next {
			t.Errorf("%s: %v – %v (%v), want %s – %s", c.period, s, n, err, c.start, c.next)
		}
	}
	if _, _, err := periodBounds("fortnight", at); err == nil {
		t.Error("an unknown period was accepted")
	}
}

// A token narrowed to a verb its holder holds under a limit counts on the
// holder's limit: a person limited to 1 Agent.create an hour cannot make a
// second agent through a narrowed token.
func TestNarrowedTokenCountsOnItsHoldersLimit(t *testing.T) {
	w := newLimitWorld(t, 1)
	rt := w.rts[0]
	p := w.person(t, "holder@example.com", models.Permission{Verb: "Agent.create", LimitCount: 1, LimitPeriod: "hour"})
	tok, err := rt.TokenCreate(t.Context(), p, TokenCreateInput{Name: "task", Expires: "1h", Permissions: []string{"Agent.create"}})
	if err != nil {
		t.Fatal(err)
	}
	name := "by-person"
	if _, err := rt.AgentCreate(t.Context(), p, AgentInput{Name: &name}); err != nil {
		t.Fatalf("the person's first agent: %v", err)
	}
	tp, err := rt.AuthenticateToken(t.Context(), tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	name = "by-token"
	_, err = rt.AgentCreate(t.Context(), tp, AgentInput{Name: &name})
	if e, _ := AsError(err); e == nil || e.Code != "limit_reached" {
		t.Fatalf("a second agent through the narrowed token: %v", err)
	}
}

// Counts of periods long over are removed beside a limited call.
func TestOldLimitCountsAreSwept(t *testing.T) {
	w := newLimitWorld(t, 1)
	p := w.person(t, "sweeper@example.com", models.Permission{Verb: "Agent.create", LimitCount: 5, LimitPeriod: "month"})
	old := time.Now().UTC().AddDate(0, -3, 0)
	if err := w.db.Create(&models.LimitUsage{PermissionID: "perm_old", HolderID: p.ID, PeriodStart: old, Used: 3}).Error; err != nil {
		t.Fatal(err)
	}
	name := "swept"
	if _, err := w.rts[0].AgentCreate(t.Context(), p, AgentInput{Name: &name}); err != nil {
		t.Fatal(err)
	}
	var n int64
	w.db.Model(&models.LimitUsage{}).Count(&n)
	if n != 1 {
		t.Errorf("%d limit_usage rows after the sweep, want 1 (this month's)", n)
	}
}
