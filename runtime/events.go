package runtime

import (
	"sync"
	"sync/atomic"
)

// Event tells subscribers that something changed: a tool call finished, an
// approval was asked or decided. Subscribers re-read the record; the event
// carries only what they need to decide whether to.
type Event struct {
	Kind      string // call, call_output, approval, session, sandbox, volume, EventAccess, EventResync
	ID        string
	SessionID string
	State     string
}

// hub fans events out to in-process subscribers (waiting calls, live pages).
type hub struct {
	mu     sync.Mutex
	next   int
	subs   map[int]subscription
	closed bool
	missed atomic.Int64 // deliveries a full subscriber did not take
}

// subscription is a subscriber's buffer, and what it wants of the events
// (nil: all of them).
type subscription struct {
	ch   chan Event
	want func(Event) bool
}

func newHub() *hub { return &hub{subs: map[int]subscription{}} }

// Subscribe returns a channel of the events want reports true for (nil:
// all of them) and a function that ends the subscription. A subscriber
// that falls behind misses events rather than blocking the runtime, so
// each event must be a hint to re-read, never the only copy of a state;
// the last place in its buffer goes to an EventResync, which every
// subscriber gets, so once it catches up it is told to re-read everything
// (see fanout). The events it does not want cost it no wake-up and no
// place in its buffer, so a waiting call, which wants the events of one
// call or session, or a page, which wants those of what it shows, does
// not fall behind the rest. want runs in the publisher's goroutine under
// the hub's lock: it must be quick, take no lock, and read nothing another
// goroutine writes.
func (r *Runtime) Subscribe(want func(Event) bool) (<-chan Event, func()) {
	h := r.events
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	ch := make(chan Event, 64)
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	h.subs[id] = subscription{ch: ch, want: want}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if s, ok := h.subs[id]; ok {
			delete(h.subs, id)
			close(s.ch)
		}
	}
}

// publish tells this process's subscribers and, on PostgreSQL, the other
// replicas' (events_pg.go).
func (r *Runtime) publish(e Event) {
	r.fanout(e)
	if b := r.bus.Load(); b != nil {
		b.send(e)
	}
}

// fanout tells this process's subscribers only.
func (r *Runtime) fanout(e Event) {
	h := r.events
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		if s.want != nil && !e.Resync() && !s.want(e) {
			continue
		}
		ch := s.ch
		// Only fanout sends, under h.mu, so a place seen free stays free.
		switch free := cap(ch) - len(ch); {
		case free > 1 || (free == 1 && e.Resync()):
			ch <- e
		case free == 1:
			// The last place goes to a resync: the subscriber reaches it
			// after what it has queued and re-reads everything, which
			// covers this event and any dropped until it has room again
			// (whenever the buffer is full, its newest entry is a resync).
			ch <- Event{Kind: EventResync}
			h.missed.Add(1)
		default:
			h.missed.Add(1)
		}
	}
}

// Resync reports whether e tells a subscriber that events were lost (it
// fell behind, or the replicas' bus reconnected) and it should re-read
// whatever it shows or waits for.
func (e Event) Resync() bool { return e.Kind == EventResync }

// EventCounts are the event figures /metrics shows.
type EventCounts struct {
	// Missed: deliveries to this replica's subscribers (live pages,
	// waiting calls, the sandboxes' suspension) dropped because the
	// subscriber's buffer was full. Each then gets a resync and re-reads,
	// so a rising count means events come faster than subscribers re-read
	// (heavy traffic, a slow database), not a lost state.
	Missed int64
	// Events sent to the other replicas, heard from them, and not sent
	// (the queue was full, the NOTIFY failed, or one was too large for a
	// NOTIFY); PostgreSQL only. Resyncs count as events.
	Sent, Received, NotSent int64
}

// EventCounts reads the figures.
func (r *Runtime) EventCounts() EventCounts {
	c := EventCounts{Missed: r.events.missed.Load()}
	if b := r.bus.Load(); b != nil {
		c.Sent, c.Received, c.NotSent = b.sent.Load(), b.received.Load(), b.dropped.Load()
	}
	return c
}

// CloseEvents ends every subscription: live pages' streams see their channel
// close and finish, so a server shutting down does not wait on them.
func (r *Runtime) CloseEvents() {
	h := r.events
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for id, s := range h.subs {
		delete(h.subs, id)
		close(s.ch)
	}
}
