package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// TestGroupCommitKeepsEachCallersOutcome: on SQLite, calls whose records
// queue while another is being written are written together in one
// transaction. When one of them cannot be written (a trigger refuses its
// row, as a full disk or a broken constraint would), every other caller of
// the batch is still answered with its call succeeded and recorded with its
// Action, the failing caller gets its own error, and nothing of the failing
// call is half-written: no call row, only the failed Action its error left.
func TestGroupCommitKeepsEachCallersOutcome(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.SQLite {
		t.Skip("group commit is SQLite's (PostgreSQL merges commits itself)")
	}
	r, _, s := skillSession(t, db)
	ctx := t.Context()
	sp := SessionPrincipal(s.ID, "")
	wait := 10.0
	read := func(path string) (ToolCallView, error) {
		in, _ := json.Marshal(map[string]string{"path": path})
		return r.ToolCallCreate(ctx, sp, ToolCallInput{Session: s.ID, Tool: "skill__policy__read", Input: in, WaitSeconds: &wait})
	}
	if c, err := read("refunds.md"); err != nil || c.Status != CallSucceeded {
		t.Fatalf("first read: %v %+v", err, c)
	}
	if err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON tool_calls WHEN NEW.input LIKE '%poison%'
		BEGIN SELECT RAISE(ABORT, 'poisoned record'); END`).Error; err != nil {
		t.Fatal(err)
	}
	st := &r.hot.batch.stats
	const callers = 12
	for round, poisoned := range []int{-1, 5} {
		retriedBefore := st.retried.Load()
		// Hold the writer while the callers queue, so that they all land in
		// one batch once it is released.
		r.hot.writeMu.Lock()
		var wg sync.WaitGroup
		views := make([]ToolCallView, callers)
		errs := make([]error, callers)
		for i := range callers {
			path := "refunds.md"
			if i == poisoned {
				path = "poison.md"
			}
			wg.Go(func() { views[i], errs[i] = read(path) })
		}
		deadline := time.Now().Add(time.Minute)
		for st.queued.Load() < callers-1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		queued := st.queued.Load()
		r.hot.writeMu.Unlock()
		wg.Wait()
		if queued != callers-1 {
			t.Fatalf("round %d: %d callers queued behind the first, want %d", round, queued, callers-1)
		}
		if st.largest.Load() < callers {
			t.Errorf("round %d: the largest batch wrote %d records, want all %d", round, st.largest.Load(), callers)
		}
		if poisoned < 0 && st.retried.Load() != retriedBefore {
			t.Errorf("round %d: a batch with no failing record was written again", round)
		}
		for i := range callers {
			if i == poisoned {
				if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned record") {
					t.Errorf("round %d: the poisoned caller got %v %+v, want its own error", round, errs[i], views[i])
				}
				continue
			}
			if errs[i] != nil || views[i].Status != CallSucceeded {
				t.Errorf("round %d: caller %d: %v %+v", round, i, errs[i], views[i])
				continue
			}
			var call models.ToolCall
			if err := db.Where("id = ?", views[i].ID).First(&call).Error; err != nil || call.Status != CallSucceeded {
				t.Errorf("round %d: caller %d's call %s recorded as %q (%v)", round, i, views[i].ID, call.Status, err)
			}
			var acts int64
			db.Model(&models.Action{}).Where("verb = ? AND targets LIKE ? AND verdict = ?", "ToolCall.create", "%"+views[i].ID+"%", VerdictAllowed).Count(&acts)
			if acts != 1 {
				t.Errorf("round %d: caller %d's call %s has %d allowed ToolCall.create Actions, want 1", round, i, views[i].ID, acts)
			}
		}
		if poisoned >= 0 && st.retried.Load() == retriedBefore {
			t.Errorf("round %d: the failed batch was not written again record by record", round)
		}
	}
	// Nothing of the poisoned call is half-written: no call row; its
	// ToolCall.create Action is the failed one its error left, no allowed one.
	var rows int64
	db.Model(&models.ToolCall{}).Where("input LIKE ?", "%poison%").Count(&rows)
	if rows != 0 {
		t.Errorf("%d call rows of the poisoned call", rows)
	}
	var calls, allowed, failed int64
	db.Model(&models.ToolCall{}).Where("session_id = ?", s.ID).Count(&calls)
	db.Model(&models.Action{}).Where("verb = ? AND verdict = ?", "ToolCall.create", VerdictAllowed).Count(&allowed)
	db.Model(&models.Action{}).Where("verb = ? AND verdict = ? AND reason LIKE ?", "ToolCall.create", VerdictFailed, "%poisoned record%").Count(&failed)
	if want := int64(1 + 2*callers - 1); calls != want || allowed != want || failed != 1 {
		t.Errorf("calls %d, allowed Actions %d, failed Actions %d; want %d, %d, 1", calls, allowed, failed, want, want)
	}
	if testing.Verbose() {
		fmt.Printf("batches %d, records in them %d, largest %d, written again %d\n", st.batches.Load(), st.grouped.Load(), st.largest.Load(), st.retried.Load())
	}
}
