package web_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime"
)

// untilData reads events until one's data contains want (and lacks absent).
func (ev *events) untilData(t *testing.T, want, absent string) {
	t.Helper()
	for {
		_, data := ev.next(t)
		if strings.Contains(data, want) && (absent == "" || !strings.Contains(data, absent)) {
			return
		}
	}
}

// endsWithin fails unless the stream ends within d.
func (ev *events) endsWithin(t *testing.T, what string, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, ev.r)
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("%s: the stream is still open %s later", what, d)
	}
}

// An open live page follows who may do what: a change of access re-renders
// it as the person now stands (no approval needs to happen first), and
// removing the person ends every stream they had open at once.
func TestLivePagesFollowAccessAndEndWhenRefused(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	s := w.session(w.vault)
	owner := w.browserOf()
	approver := w.person(owner, "approver@example.com", "member")
	w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 30)
	w.pending(w.owner, "", 1)

	queue := approver.events("/approvals/events")
	queue.untilData(t, `data-testid="approval-approve"`, "")
	page := approver.events("/sessions/" + s.ID + "/events")
	page.untilData(t, `data-testid="approve"`, "")
	badge := approver.events("/approvals/pending/events")
	badge.next(t)

	// Demoted to viewer: the queue and the session page lose their
	// Approve buttons by themselves.
	if st := w.api(w.owner, "PATCH", "/users/"+w.userID("approver@example.com"), map[string]any{"access": "viewer"}, nil); st != 200 {
		t.Fatalf("demote: %d", st)
	}
	queue.untilData(t, getEnv, `data-testid="approval-approve"`)
	page.untilData(t, getEnv, `data-testid="approve"`)

	// Removed: every stream ends now, not at the next approval.
	if st := w.api(w.owner, "DELETE", "/users/"+w.userID("approver@example.com"), nil, nil); st != 204 && st != 200 {
		t.Fatalf("remove: %d", st)
	}
	queue.endsWithin(t, "approvals queue", 5*time.Second)
	page.endsWithin(t, "session page", 5*time.Second)
	badge.endsWithin(t, "pending badge", 5*time.Second)
}
