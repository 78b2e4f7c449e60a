package runtime

import (
	"fmt"
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
	reader, stopReader := r.Subscribe()
	defer stopReader()
	behind, stopBehind := r.Subscribe() // not read until the end
	defer stopBehind()

	publish := func(from, to int) {
		for i := from; i < to; i++ {
			r.fanout(Event{Kind: "call", ID: fmt.Sprint(i)})
		}
	}
	read := func(ch <-chan Event, want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case e := <-ch:
				got := e.ID
				if e.Resync() {
					got = "resync"
				}
				if got != w {
					t.Fatalf("got event %s, want %s", got, w)
				}
			default:
				t.Fatalf("no event left; want %s", w)
			}
		}
		select {
		case e := <-ch:
			t.Fatalf("an event more than published: %+v", e)
		default:
		}
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
	r.waitFor(t.Context(), 1500*time.Millisecond, func(Event) bool { return false }, func() (bool, error) {
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
