package runtime

import "sync"

// Event tells subscribers that something changed: a tool call finished, an
// approval was asked or decided. Subscribers re-read the record; the event
// carries only what they need to decide whether to.
type Event struct {
	Kind      string // call, approval
	ID        string
	SessionID string
	State     string
}

// hub fans events out to in-process subscribers (waiting calls, live pages).
type hub struct {
	mu     sync.Mutex
	next   int
	subs   map[int]chan Event
	closed bool
}

func newHub() *hub { return &hub{subs: map[int]chan Event{}} }

// Subscribe returns a channel of events and a function that ends the subscription.
// A subscriber that falls behind misses events rather than blocking the runtime,
// so each event must be a hint to re-read, never the only copy of a state.
func (r *Runtime) Subscribe() (<-chan Event, func()) {
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
	h.subs[id] = ch
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if c, ok := h.subs[id]; ok {
			delete(h.subs, id)
			close(c)
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
	for _, ch := range h.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// CloseEvents ends every subscription: live pages' streams see their channel
// close and finish, so a server shutting down does not wait on them.
func (r *Runtime) CloseEvents() {
	h := r.events
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for id, ch := range h.subs {
		delete(h.subs, id)
		close(ch)
	}
}
