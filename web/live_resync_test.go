package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox/local"
	"github.com/subako/subako/runtime/vault"
)

// An open Approvals page catches up with what it could not hear: an
// ask-first call made through another replica while this replica's event
// listener was cut off (a database failover, pg_terminate_backend) shows
// on the page once the listener is back, with no later event to wake it.
func TestLiveQueueCatchesUpAfterTheEventListenerReconnects(t *testing.T) {
	w, b, rtB := twoReplicas(t, askConfig)

	s := w.session(w.vault)
	queue := w.browserOf().events("/approvals/events")
	queue.next(t) // the queue as it stands: empty

	cutListeners(t, w.rt, rtB)
	sent := rtB.EventCounts().Sent
	var c struct{ Status string }
	b.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": getEnv, "input": map[string]any{}, "wait_seconds": 0}, &c)
	if c.Status != runtime.CallAwaitingApproval {
		t.Fatalf("the ask-first call through B is %q, want %s", c.Status, runtime.CallAwaitingApproval)
	}
	eventually(t, "B sends the approval's events", 5*time.Second, func() bool { return rtB.EventCounts().Sent > sent })
	if w.rt.EventsConnected() {
		t.Fatal("A's listener was back before B sent the approval's events: A heard them, and nothing here tests a resync")
	}

	// The listener comes back after a pause of a second; the page, told
	// that events were lost, reads the queue again.
	queue.untilData(t, `data-testid="approval-approve"`, "")
}

// twoReplicas is a world (replica A, with its runtime started) and a
// second replica B over the same PostgreSQL database, their event
// listeners connected; it skips on SQLite, where events stay in-process.
func twoReplicas(t *testing.T, cfg string) (*world, *env, *runtime.Runtime) {
	t.Helper()
	w := newWorldWith(t, cfg, runtime.Options{ReplicaID: "rep-a"})
	if w.rt.DB().Dialect != models.Postgres {
		t.Skip("events cross replicas on PostgreSQL only")
	}
	w.rt.Start(t.Context(), time.Hour)
	keys, _ := vault.NewKeyringFromSecret(strings.Repeat("ab", 32))
	b := &env{t: t, clock: w.clock}
	rtB := runtime.New(w.rt.DB(), runtime.Options{ReplicaID: "rep-b", Keys: keys, Clock: w.clock, Log: quiet, AllowPrivateEgress: true})
	b.serve(rtB)
	rtB.Start(t.Context(), time.Hour)
	eventually(t, "both replicas' event listeners connect", 15*time.Second, func() bool {
		return w.rt.EventsConnected() && rtB.EventsConnected()
	})
	return w, b, rtB
}

// cutListeners terminates both replicas' LISTEN connections, as a
// database failover or pg_terminate_backend does, and waits until both
// noticed. They come back after a pause of a second.
func cutListeners(t *testing.T, a, b *runtime.Runtime) {
	t.Helper()
	var killed int
	if err := a.DB().Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN %'`).Scan(&killed).Error; err != nil || killed != 2 {
		t.Fatalf("terminated %d listener connections (%v), want 2", killed, err)
	}
	eventually(t, "both listeners notice they were cut off", 5*time.Second, func() bool {
		return !a.EventsConnected() && !b.EventsConnected()
	})
}

func eventually(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for: %s", d, what)
		}
	}
}

// A call waiting for an approver hears its session's end at once and
// answers refused, without waiting for its periodic re-read (2 s after
// it began): the waiter's subscription names its call and its session,
// and one that left the session out would answer only at the re-read.
func TestAWaitingCallHearsItsSessionEndAtOnce(t *testing.T) {
	w := newWorldWith(t, askConfig, runtime.Options{})
	s := w.session(w.vault)
	began := time.Now()
	answer := w.callAsync(s.Token, s.ID, getEnv, map[string]any{}, 30)
	w.pending(w.owner, "", 1)
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	if sent := time.Since(began); sent > 1500*time.Millisecond {
		t.Skipf("the session's end was sent %s after the call, too near its re-read to tell the event from it", sent)
	}
	select {
	case c := <-answer:
		if took := time.Since(began); c.Status != runtime.CallRefused || took >= 2*time.Second {
			t.Fatalf("the waiting call answered %s (%s) %s after it was made; want refused before its re-read at 2 s", c.Status, c.Reason, took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call did not answer within 10 s of its session's end")
	}
}

// The session's Files tab follows the volume live, on the event of the
// session's volume alone: a file the agent writes through the API shows
// on the open tab, and leaves it when deleted.
func TestFilesTabFollowsTheVolumeLive(t *testing.T) {
	w := newVolumeWorld(t)
	files := w.browserOf().events("/sessions/" + w.s.ID + "/files/events")
	files.next(t) // the volume as it stands: empty
	if st, body := w.put(w.s.Token, "notes/live.txt", "hello"); st != 200 {
		t.Fatalf("Volume.put: %d %s", st, body)
	}
	files.untilData(t, `data-path="notes/live.txt"`, "")
	if st, body := w.raw(w.s.Token, "DELETE", "/sessions/"+w.s.ID+"/volume/notes/live.txt", nil, ""); st != 200 && st != 204 {
		t.Fatalf("Volume.delete: %d %s", st, body)
	}
	files.untilData(t, `data-testid="files-usage"`, `data-path="notes/live.txt"`)
}

// The Sandboxes tab follows the session's sandbox live: started by the
// first exec, suspended when the session ends.
func TestSandboxesTabFollowsTheSandboxLive(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	tab := w.browserOf().events("/sandboxes/events?session=" + s.ID)
	tab.next(t) // no sandbox yet
	w.exec(s, "true")
	tab.untilData(t, `<span class="badge badge-running">running</span>`, "")
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	tab.untilData(t, `<span class="badge badge-suspended">suspended</span>`, "")
}

// An agent's MCP connection is closed when its session ends, even on a
// replica whose event listener was cut off when another replica ended it:
// told that events were lost, the endpoint checks the sessions it serves
// within seconds (10 s at most after its previous check) instead of at its
// five-minute sweep.
func TestMCPConnectionClosesWhenItsSessionEndsUnheard(t *testing.T) {
	w, b, rtB := twoReplicas(t, everythingConfig)

	s := w.session(w.vault)
	cs := w.mcpAs(s.Token, s.ID) // on A
	if res, err := cs.CallTool(t.Context(), echoParams("before")); err != nil || res.IsError {
		t.Fatalf("an echo before the end: %v %+v", err, res)
	}
	closed := make(chan error, 1)
	go func() { closed <- cs.Wait() }()

	// A first cut: its resync, once A's listener is back, has the endpoint
	// sweep now, so the next one comes within the gap between sweeps and
	// must be put off, not dropped.
	cutListeners(t, w.rt, rtB)
	eventually(t, "both listeners come back", 15*time.Second, func() bool {
		return w.rt.EventsConnected() && rtB.EventsConnected()
	})
	cutListeners(t, w.rt, rtB)
	sent := rtB.EventCounts().Sent
	if st := b.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end through B: %d", st)
	}
	eventually(t, "B sends the session's end", 5*time.Second, func() bool { return rtB.EventCounts().Sent > sent })
	if w.rt.EventsConnected() {
		t.Fatal("A's listener was back before B sent the session's end: A heard it, and nothing here tests a resync")
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the MCP connection to A stayed open 30 s after its session ended through B")
	}
}

// Ending a session closes the agents' MCP connections to it at once.
func TestMCPConnectionClosesWhenItsSessionEnds(t *testing.T) {
	w := newWorld(t, everythingConfig)
	s := w.session(w.vault)
	cs := w.mcpAs(s.Token, s.ID)
	if res, err := cs.CallTool(t.Context(), echoParams("before")); err != nil || res.IsError {
		t.Fatalf("an echo before the end: %v %+v", err, res)
	}
	closed := make(chan error, 1)
	go func() { closed <- cs.Wait() }()
	if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the MCP connection stayed open 10 s after its session ended")
	}
}
