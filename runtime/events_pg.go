package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/subako/subako/models"
)

// Events across replicas (issue 19): on PostgreSQL every event published
// here is also sent with NOTIFY on channel subako_events, and every replica
// LISTENs on a connection of its own and hands what the others sent to its
// in-process subscribers, as if published here. A replica ignores its own
// echoes (the payload names the origin). Events stay hints: whenever some
// may have been lost (the listener reconnected, or the sender dropped
// some), the subscribers are handed a resync and re-read, and the waiters
// re-read every recheckEvery (toolcalls.go) anyway.

// EventsChannel is the PostgreSQL NOTIFY channel events cross replicas on.
const EventsChannel = "subako_events"

const (
	// maxNotifyBytes keeps a payload under PostgreSQL's 8000-byte limit.
	maxNotifyBytes = 7900
	// busQueue bounds events waiting to be sent; past it they are dropped
	// (the re-read covers them) rather than slowing a call down.
	busQueue = 4096
	// busBatch bounds the events of one NOTIFY.
	busBatch = 64
	// busResyncEvery spaces the resyncs sent after dropped events.
	busResyncEvery = time.Second
)

// EventResync is handed to local subscribers after the listener
// reconnected, when a subscriber fell behind (events.go), and to the other
// replicas after this one could not send them events: events may be lost,
// so anything open re-reads.
const EventResync = "resync"

// busMessage is a NOTIFY payload: the origin replica and its events.
type busMessage struct {
	Origin string  `json:"o"`
	Events []Event `json:"e"`
}

type pgBus struct {
	r         *Runtime
	out       chan Event
	connected atomic.Bool
	sent      atomic.Int64 // events sent, for tests and /metrics
	received  atomic.Int64 // events of other replicas handed to subscribers
	dropped   atomic.Int64
	resynced  int64 // dropped when the last resync was sent (sendLoop's own)
}

// send queues e for the other replicas; it never blocks a caller.
func (b *pgBus) send(e Event) {
	select {
	case b.out <- e:
	default:
		b.dropped.Add(1)
	}
}

// startBus starts sending and listening when the database is PostgreSQL.
func (r *Runtime) startBus(ctx context.Context) {
	if r.db.Dialect != models.Postgres {
		return
	}
	cfg, err := r.listenConfig(ctx)
	if err != nil {
		r.opts.Log.Error("runtime: events will not cross replicas", "err", err)
		return
	}
	b := &pgBus{r: r, out: make(chan Event, busQueue)}
	r.bus.Store(b)
	go b.sendLoop(ctx)
	go b.listenLoop(ctx, cfg)
}

// listenConfig copies the pool's connection settings, so the listener
// connects where the pool does without a URL of its own.
func (r *Runtime) listenConfig(ctx context.Context) (*pgx.ConnConfig, error) {
	sqlDB, err := r.db.DB.DB()
	if err != nil {
		return nil, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime: events: %w", err)
	}
	defer conn.Close()
	var cfg *pgx.ConnConfig
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("runtime: events: the PostgreSQL driver is %T, not pgx", dc)
		}
		cfg = c.Conn().Config().Copy()
		return nil
	})
	return cfg, err
}

// sendLoop sends queued events, several to one NOTIFY when they pile up.
// After any were dropped (the queue was full, one was too large, a NOTIFY
// failed) it sends a resync, so the other replicas re-read what they show:
// at most one every busResyncEvery, since each wakes every page and waiter
// there, and again if it failed.
func (b *pgBus) sendLoop(ctx context.Context) {
	resync := time.NewTicker(busResyncEvery)
	defer resync.Stop()
	var lastResync time.Time
	for {
		var batch []Event
		select {
		case <-ctx.Done():
			return
		case <-resync.C:
		case e := <-b.out:
			batch = append(batch, e)
		}
		for more := len(batch) > 0; more && len(batch) < busBatch; {
			select {
			case e := <-b.out:
				batch = append(batch, e)
			default:
				more = false
			}
		}
		b.notify(ctx, batch)
		if d := b.dropped.Load(); d != b.resynced && time.Since(lastResync) >= busResyncEvery {
			b.resynced, lastResync = d, time.Now()
			b.notify(ctx, []Event{{Kind: EventResync}})
		}
	}
}

// notify sends events to the other replicas and counts them sent or dropped.
func (b *pgBus) notify(ctx context.Context, events []Event) {
	for _, p := range b.payloads(events) {
		err := b.r.db.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", EventsChannel, p.text).Error
		switch {
		case err == nil:
			b.sent.Add(int64(p.events))
		case ctx.Err() == nil:
			b.dropped.Add(int64(p.events))
			b.r.opts.Log.Warn("runtime: events: notify other replicas", "events", p.events, "err", err)
		}
	}
}

// payload is one NOTIFY's text and how many events it carries.
type payload struct {
	text   string
	events int
}

// payloads packs events into as few payloads under maxNotifyBytes as it
// can; an event too large on its own (ids are short, so none should be) is
// dropped.
func (b *pgBus) payloads(events []Event) []payload {
	var out []payload
	msg := busMessage{Origin: b.r.replica.ID}
	flush := func() {
		if len(msg.Events) > 0 {
			p, _ := json.Marshal(msg)
			out = append(out, payload{text: string(p), events: len(msg.Events)})
			msg.Events = nil
		}
	}
	size := len(msg.Origin) + 16
	for _, e := range events {
		one, _ := json.Marshal(e)
		if size+len(one)+1 > maxNotifyBytes {
			flush()
			size = len(msg.Origin) + 16
		}
		if size+len(one)+1 > maxNotifyBytes {
			b.dropped.Add(1)
			continue
		}
		msg.Events = append(msg.Events, e)
		size += len(one) + 1
	}
	flush()
	return out
}

// listenLoop keeps a LISTEN connection open, reconnecting with a growing
// pause (1 s to 30 s) and subscribing again after each reconnect.
func (b *pgBus) listenLoop(ctx context.Context, cfg *pgx.ConnConfig) {
	pause := time.Second
	for first := true; ctx.Err() == nil; first = false {
		began := time.Now()
		err := b.listen(ctx, cfg, !first)
		b.connected.Store(false)
		if ctx.Err() != nil {
			return
		}
		b.r.opts.Log.Warn("runtime: events listener lost; reconnecting", "err", err, "in", pause)
		if time.Since(began) > time.Minute {
			pause = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// listen connects, subscribes, and hands notifications to local
// subscribers until the connection fails or ctx ends.
func (b *pgBus) listen(ctx context.Context, cfg *pgx.ConnConfig, again bool) error {
	cfg = cfg.Copy()
	// The handler is ours: the pool's settings may carry another, and
	// pgx.Conn's buffer would be bypassed by it.
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) { b.receive(ctx, n) }
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+EventsChannel); err != nil {
		return err
	}
	b.connected.Store(true)
	if again {
		// Events of the gap were lost: caches, calls and pages catch up.
		b.r.caughtUp(ctx)
		b.r.fanout(Event{Kind: EventResync})
	}
	for {
		if err := conn.PgConn().WaitForNotification(ctx); err != nil {
			return err
		}
	}
}

// receive hands another replica's notification to local subscribers.
func (b *pgBus) receive(ctx context.Context, n *pgconn.Notification) {
	if n == nil || n.Channel != EventsChannel {
		return
	}
	var msg busMessage
	if err := json.Unmarshal([]byte(n.Payload), &msg); err != nil {
		return // not ours: someone else NOTIFYs on the channel
	}
	if msg.Origin == b.r.replica.ID || len(msg.Events) > busBatch {
		return
	}
	for _, e := range msg.Events {
		b.received.Add(1)
		b.r.deliverRemote(ctx, e)
	}
}

// deliverRemote hands another replica's event to this one's subscribers.
// A change to who may do what drops this replica's caches of it too, as
// the write would have had it been made here. A call another replica
// recorded final (ToolCall.cancel there, or its session ended) that this
// replica runs is stopped at once, as a cancel made here would. A resync
// (the sender lost events, any of which may have been one of those) does
// both for whatever it may have been.
func (r *Runtime) deliverRemote(ctx context.Context, e Event) {
	switch {
	case e.Kind == EventAccess:
		r.auth.reset()
		r.hot.invalidate()
	case e.Kind == "call" && finalStatus(e.State):
		r.stopRunning(e.ID)
	case e.Resync():
		r.caughtUp(ctx)
	}
	r.fanout(e)
}

// caughtUp makes up for events of the other replicas that were lost: the
// caches of who may do what are dropped, and calls cancelled elsewhere
// stopped here.
func (r *Runtime) caughtUp(ctx context.Context) {
	r.auth.reset()
	r.hot.invalidate()
	go r.stopCancelledElsewhere(ctx)
}

// EventsConnected tells whether events cross replicas now: true on a
// single-process database (nothing to cross), and on PostgreSQL while the
// listener is connected.
func (r *Runtime) EventsConnected() bool {
	b := r.bus.Load()
	return b == nil || b.connected.Load()
}

var errEventsDown = errors.New("the events listener is not connected (events from other replicas are delayed)")
