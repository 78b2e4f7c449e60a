package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// Small things the session and approvals pages must get right: a tool with
// no policy says so where the others show theirs, a call made without a
// model shows a dash, and a link to one approval opens the queue on it.
func TestSessionPageDetailsAndApprovalLinks(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	st, c := w.call(s.Token, s.ID, getEnv, map[string]any{}, 0)
	if st != 202 || c.Approval == nil {
		t.Fatalf("an ask-first call: %d %+v", st, c)
	}
	rename := map[string]any{"tool": "builtin__session__rename", "input": map[string]any{"title": "renamed"}}
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", rename, nil); st != 200 {
		t.Fatalf("rename without a model: %d", st)
	}
	b := w.browserOf()
	_, page := b.get("/sessions/" + s.ID)
	offered := page[strings.Index(page, `data-testid="offered-builtin__session__rename"`):]
	offered = offered[:strings.Index(offered, "</summary>")]
	if !strings.Contains(offered, "no policy") {
		t.Errorf("a built-in tool shows no policy, unlike the others:\n%s", offered)
	}
	if !strings.Contains(page, `<td class="small muted">—</td>`) {
		t.Error("a call made without a model shows an empty Model cell")
	}
	resp, _ := b.get("/approvals/" + c.Approval.ID)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/approvals?approval="+c.Approval.ID+"#approval-"+c.Approval.ID {
		t.Fatalf("/approvals/%s answered %d to %q, want the queue on that approval", c.Approval.ID, resp.StatusCode, loc)
	}
	if _, queue := b.get("/approvals?approval=" + c.Approval.ID); !strings.Contains(queue, c.Approval.ID) {
		t.Fatal("the queue does not show the linked approval")
	}
}
