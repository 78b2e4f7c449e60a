package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
)

// A subscriber that falls behind misses events rather than holding up the
// runtime, but is never left unaware: the last place in its buffer holds a
// resync, which it reaches after what it has queued, and every delivery it
// missed is counted for /metrics. One that keeps up misses nothing.
func TestASubscriberBehindIsToldToResync(t *testing.T) {
	r := New(modelstest.Open(t), Options{})
	reader, stopReader := r.Subscribe(nil)
	defer stopReader()
	behind, stopBehind := r.Subscribe(nil) // not read until the end
	defer stopBehind()

	publish := func(from, to int) {
		for i := from; i < to; i++ {
			r.fanout(Event{Kind: "call", ID: fmt.Sprint(i)})
		}
	}
	byID := func(e Event) string {
		if e.Resync() {
			return "resync"
		}
		return e.ID
	}
	read := func(ch <-chan Event, want ...string) {
		t.Helper()
		takeExactly(t, ch, byID, want...)
	}
	ids := func(from, to int) (s []string) {
		for i := from; i < to; i++ {
			s = append(s, fmt.Sprint(i))
		}
		return s
	}

	publish(0, 63) // one place left in each buffer
	if n := r.EventCounts().Missed; n != 0 {
		t.Fatalf("%d events counted missed while every buffer had room", n)
	}
	read(reader, ids(0, 63)...)
	publish(63, 100)
	read(reader, ids(63, 100)...)
	if n := r.EventCounts().Missed; n != 37 {
		t.Fatalf("the subscriber behind missed 37 events; /metrics would count %d", n)
	}
	read(behind, append(ids(0, 63), "resync")...)

	// Caught up, it gets events again as they come.
	publish(100, 101)
	read(behind, "100")
	read(reader, "100")
}

// A waiting call's subscription names what it wants: its call's events
// (not its live output) and its session's, and resyncs. The rest neither
// wake it nor fill its buffer, however many come.
func TestAWaiterGetsOnlyItsEventsAndResyncs(t *testing.T) {
	r := New(modelstest.Open(t), Options{})
	events, stop := r.Subscribe(callOrSessionChanged("call_mine", "ses_mine"))
	defer stop()
	missed := r.EventCounts().Missed
	for i := range 1000 {
		r.fanout(Event{Kind: "call", ID: fmt.Sprint("call_", i), SessionID: "ses_mine", State: CallSucceeded})
		r.fanout(Event{Kind: "call_output", ID: "call_mine", SessionID: "ses_mine"})
		r.fanout(Event{Kind: "session", ID: "ses_other", SessionID: "ses_other", State: SessionEnded})
	}
	r.fanout(Event{Kind: "approval", ID: "call_mine", SessionID: "ses_mine", State: ApprovalPending})
	r.fanout(Event{Kind: "session", ID: "ses_mine", SessionID: "ses_mine", State: SessionEnded})
	r.fanout(Event{Kind: EventResync})
	takeExactly(t, events, func(e Event) string { return e.Kind }, "approval", "session", EventResync)
	if n := r.EventCounts().Missed - missed; n != 0 {
		t.Fatalf("%d events counted missed; the waiter wanted none of them", n)
	}
}

// takeExactly takes the events named want from ch, in order, each named
// by name, and fails if one is missing or any more is queued.
func takeExactly(t *testing.T, ch <-chan Event, name func(Event) string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case e := <-ch:
			if got := name(e); got != w {
				t.Fatalf("got event %s (%+v), want %s", got, e, w)
			}
		default:
			t.Fatalf("no event left; want %s", w)
		}
	}
	select {
	case e := <-ch:
		t.Fatalf("an event more than wanted: %+v", e)
	default:
	}
}

// A waiter that falls behind at every read (events come faster than it
// reads) re-reads on the resync, but spaced: not back to back, which under
// load would only add to what slows it down.
func TestAWaiterBehindReReadsSpaced(t *testing.T) {
	r := New(modelstest.Open(t), Options{})
	stop := make(chan struct{})
	defer close(stop)
	go func() { // 5,000 unrelated events a second
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for range 5 {
					r.fanout(Event{Kind: "call", ID: "unrelated"})
				}
			}
		}
	}()
	reads := 0
	// A waiter taking every event (want nil). A call's waiters take only
	// its call's and its session's, but a resync comes to every one.
	r.waitFor(t.Context(), 1500*time.Millisecond, nil, func(Event) bool { return false }, func() (bool, error) {
		reads++
		time.Sleep(20 * time.Millisecond) // a read under load
		return false, nil
	})
	// 1.5 s: the first read, then one a resyncGap (250 ms) apart at most,
	// and the last look when the wait ends.
	if reads < 3 || reads > 9 {
		t.Fatalf("the waiter read %d times in 1.5 s while it fell behind; want a read about every %s (3 to 9)", reads, resyncGap)
	}
}

// BenchmarkFanout: an event published while n calls wait, none of them
// for it. Their subscriptions take every event and filter it themselves
// (all), or name what they want in the hub (filtered), as waiting calls
// do. An op is the publish and every waiter's look at the event, so
// ns/op is the CPU an event costs with n waiting, on two cores.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, filtered := range []bool{false, true} {
			name := fmt.Sprintf("waiting_%d/all", n)
			if filtered {
				name = fmt.Sprintf("waiting_%d/filtered", n)
			}
			b.Run(name, func(b *testing.B) { benchmarkFanout(b, n, filtered) })
		}
	}
}

func benchmarkFanout(b *testing.B, n int, filtered bool) {
	r := New(modelstest.Open(b), Options{})
	defer r.CloseEvents()
	var looked sync.WaitGroup // each waiter's look at the op's event
	var woke atomic.Int64
	for i := range n {
		id := fmt.Sprint("call-", i)
		var want func(Event) bool
		if filtered {
			want = func(e Event) bool { return e.ID == id }
		}
		events, _ := r.Subscribe(want)
		go func() {
			for e := range events {
				if e.ID != id { // what a waiter's matters does
					woke.Add(1)
					looked.Done()
				}
			}
		}()
	}
	b.ResetTimer()
	for range b.N {
		if !filtered {
			looked.Add(n)
		}
		r.fanout(Event{Kind: "call", ID: "unrelated"})
		looked.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(woke.Load())/float64(b.N), "wakeups/op")
}
