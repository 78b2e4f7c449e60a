package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
)

// Events cross replicas again after PostgreSQL ends the listeners'
// connections (pg_terminate_backend, a failover of the database): the
// subscribers hear a resync, then the other replica's events as before;
// an event too large for a NOTIFY is dropped without holding up the next,
// and the other replicas are told to resync.
func TestEventsResumeAfterTheListenerIsKilled(t *testing.T) {
	db := modelstest.Open(t)
	if db.Dialect != models.Postgres {
		t.Skip("events cross replicas on PostgreSQL only")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := New(db, Options{ReplicaID: "rep-a"})
	b := New(db, Options{ReplicaID: "rep-b"})
	a.startBus(ctx)
	b.startBus(ctx)
	events, stop := a.Subscribe(nil)
	defer stop()
	waitConnected := func() {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !(a.EventsConnected() && b.EventsConnected()) {
			if time.Now().After(deadline) {
				t.Fatal("the events listeners did not connect within 15 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// hear publishes on b until a hears id (a NOTIFY sent before a's
	// LISTEN took effect is not delivered); it tells whether a heard a
	// resync meanwhile.
	hear := func(id string) (resync bool) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		b.publish(Event{Kind: "call", ID: id})
		for {
			select {
			case e := <-events:
				resync = resync || e.Resync()
				if e.ID == id {
					return resync
				}
			case <-tick.C:
				b.publish(Event{Kind: "call", ID: id})
			case <-deadline:
				t.Fatalf("replica a never heard b's event %s", id)
			}
		}
	}
	waitConnected()
	hear("call_before")

	// Too large for one NOTIFY: dropped; the next goes through, and with it
	// a resync, so what a's subscribers show is read again.
	b.publish(Event{Kind: "call", ID: strings.Repeat("x", 9000)})
	for told, deadline := hear("call_after_large"), time.After(5*time.Second); !told; {
		select {
		case e := <-events:
			told = e.Resync()
		case <-deadline:
			t.Fatal("b dropped an event meant for a, and a was not told to resync")
		}
	}
	if c := b.EventCounts(); c.NotSent != 1 {
		t.Errorf("b counts %d events not sent, want 1 (the one too large)", c.NotSent)
	}

	var killed int
	if err := db.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN %'`).Scan(&killed).Error; err != nil {
		t.Fatal(err)
	}
	if killed != 2 {
		t.Fatalf("terminated %d listener connections, want 2", killed)
	}
	resync := time.After(15 * time.Second)
	for got := false; !got; {
		select {
		case e := <-events:
			got = e.Kind == EventResync
		case <-resync:
			t.Fatal("no resync event after the listener reconnected")
		}
	}
	waitConnected()
	hear("call_after_kill")
}
