package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// The Audit page's person filter (by an email, or by an id through the API)
// lists a person's Actions and the failed sign-ins under their email,
// newest first, each once across pages in both directions, with the list's
// other filters; and on SQLite it reads them through migration 0036's two
// indexes, not by walking the whole log.
func TestActionPersonFilterPagesThroughItsIndexes(t *testing.T) {
	db := modelstest.Open(t)
	r := New(db, Options{})
	defer r.Close()
	ctx := t.Context()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var rows []models.Action
	add := func(i int, kind PrincipalKind, id, label, verdict string) string {
		a := models.Action{ID: fmt.Sprintf("act_%s_%03d", kind, i), Verb: "Agent.update", ByKind: string(kind), ByID: id, ByLabel: label,
			Verdict: verdict, CreatedAt: base.Add(-time.Duration(i/3) * time.Second)} // three to a second: pages end inside a second
		if kind == PrincipalAnonymous {
			a.Verb = "User.login"
		}
		rows = append(rows, a)
		return a.ID
	}
	var alice, aliceRefused, aliceSignIns, session []string
	for i := range 40 {
		switch i % 4 {
		case 0:
			verdict := VerdictAllowed
			if i%8 == 0 {
				verdict = VerdictRefused
			}
			id := add(i, PrincipalUser, "usr_alice", "alice@example.com", verdict)
			alice = append(alice, id)
			if verdict == VerdictRefused {
				aliceRefused = append(aliceRefused, id)
			}
		case 1:
			aliceSignIns = append(aliceSignIns, add(i, PrincipalAnonymous, "anonymous", "alice@example.com", VerdictRefused))
		case 2:
			add(i, PrincipalUser, "usr_bob", "bob@example.com", VerdictAllowed)
		case 3:
			// A session is found by its id, not by its label (its title).
			session = append(session, add(i, PrincipalSession, "ses_x", "session alice@example.com", VerdictAllowed))
		}
	}
	if err := db.Create(&rows).Error; err != nil {
		t.Fatal(err)
	}
	newestFirst := func(ids ...[]string) []string {
		at := map[string]time.Time{}
		for _, a := range rows {
			at[a.ID] = a.CreatedAt
		}
		all := slices.Concat(ids...)
		slices.SortFunc(all, func(a, b string) int {
			if c := at[b].Compare(at[a]); c != 0 {
				return c
			}
			return strings.Compare(b, a)
		})
		return all
	}
	// pages follows Older to the end, then Newer back from the last page to
	// the first: newer is what those pages held.
	pages := func(f ActionFilter) (older, newer []string, lastLen int) {
		t.Helper()
		f.Limit = 4
		var last ActionPage
		for n := 0; ; n++ {
			pg, err := r.ActionListPage(ctx, System, f)
			if err != nil || n > 20 {
				t.Fatalf("Action.list %+v: %v (page %d)", f, err, n)
			}
			for _, it := range pg.Items {
				older = append(older, it.ID)
			}
			last = pg
			if pg.Next == "" {
				lastLen = len(pg.Items)
				break
			}
			f.Cursor = pg.Next
		}
		for n := 0; last.Prev != ""; n++ {
			f.Cursor = last.Prev
			pg, err := r.ActionListPage(ctx, System, f)
			if err != nil || n > 20 {
				t.Fatalf("Action.list %+v: %v (page %d back)", f, err, n)
			}
			newer = append(slices.Clone(itemIDs(pg)), newer...)
			last = pg
		}
		return older, newer, lastLen
	}
	for _, c := range []struct {
		name string
		f    ActionFilter
		want []string
	}{
		{"her email", ActionFilter{By: "alice@example.com"}, newestFirst(alice, aliceSignIns)},
		{"her email, refused", ActionFilter{By: "alice@example.com", Verdict: VerdictRefused}, newestFirst(aliceRefused, aliceSignIns)},
		{"her id, refused", ActionFilter{By: "usr_alice", Verdict: VerdictRefused}, newestFirst(aliceRefused)},
		{"her id, sign-ins", ActionFilter{By: "usr_alice", Verb: "User.login"}, nil},
		{"the session's id", ActionFilter{By: "ses_x"}, newestFirst(session)},
		{"the session's label", ActionFilter{By: "session alice@example.com"}, nil},
		{"her email, changes", ActionFilter{By: "alice@example.com", Changes: true}, newestFirst(alice, aliceSignIns)},
		{"her id", ActionFilter{By: "usr_alice"}, newestFirst(alice)},
	} {
		older, newer, lastLen := pages(c.f)
		if !slices.Equal(older, c.want) {
			t.Errorf("%s, following Older: %v\nwant %v", c.name, older, c.want)
		}
		if want := c.want[:len(c.want)-lastLen]; !slices.Equal(newer, want) {
			t.Errorf("%s, following Newer back from the last page: %v\nwant %v", c.name, newer, want)
		}
	}

	if db.Dialect != models.SQLite {
		return
	}
	var found []models.Action
	stmt := r.actionListQuery(ctx, System, ActionFilter{By: "alice@example.com", Changes: true}, Cursor{}, 100).
		Session(&gorm.Session{DryRun: true}).Find(&found).Statement
	plan := queryPlan(t, db, stmt.SQL.String(), stmt.Vars...)
	for _, want := range []string{"USING INDEX actions_by_page (by_id=?)", "USING INDEX actions_label_page (by_label=?)"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the person filter reads %q, want %q", plan, want)
		}
	}
	if strings.Contains(plan, "SCAN actions") {
		t.Errorf("the person filter walks the log: %q", plan)
	}
}

func itemIDs(pg ActionPage) []string {
	var ids []string
	for _, it := range pg.Items {
		ids = append(ids, it.ID)
	}
	return ids
}
