package runtime

import (
	"context"
	"sync"
	"time"
)

// /readyz reflects every part a replica needs to serve: the database (a
// write, ready.go), events across replicas (PostgreSQL's listener), the
// sandbox driver, and what the wiring adds (the archive store's Ping). A
// part's error goes to the log, never into the answer: /readyz is public.

// ReadyCheck is one further part of readiness; Check answers nil when the
// part works. Wiring adds them (AddReadyCheck) once the part is built.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
	// Degrades: a failing Check makes the part "degraded", reported but
	// not deciding readiness. For a part every replica shares (the archive
	// store): its outage would take the whole fleet out of the load
	// balancer while most verbs still work.
	Degrades bool
}

// ReadyPart is one part's state: "ok", "failing", "degraded" (failing,
// but the replica stays ready: a shared part, see ReadyCheck.Degrades), or
// "off" (not configured on this replica; not a failure).
type ReadyPart struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Detail says what fails in a fixed sentence (never an error's text:
	// /readyz answers anyone who reaches it).
	Detail string `json:"detail,omitempty"`
}

// ReadyReport is /readyz's answer.
type ReadyReport struct {
	Ready   bool        `json:"ready"`
	Replica string      `json:"replica"`
	Parts   []ReadyPart `json:"parts"`
}

// readyCheckTimeout bounds each further check.
const readyCheckTimeout = 2 * time.Second

type readyChecks struct {
	mu     sync.Mutex
	list   []ReadyCheck
	at     time.Time
	states map[string]string
}

// AddReadyCheck adds a part /readyz reflects (the archive store …).
func (r *Runtime) AddReadyCheck(c ReadyCheck) {
	x := &r.readyExtra
	x.mu.Lock()
	defer x.mu.Unlock()
	x.list = append(x.list, c)
	x.at = time.Time{}
}

// ReadyParts checks every part, the further checks at most once per
// readyFor (each bounded by readyCheckTimeout, all at once).
func (r *Runtime) ReadyParts(ctx context.Context) ReadyReport {
	rep := ReadyReport{Ready: true, Replica: r.replica.ID}
	add := func(name, state, detail string) {
		rep.Parts = append(rep.Parts, ReadyPart{Name: name, State: state, Detail: detail})
		if state == "failing" {
			rep.Ready = false
		}
	}
	if err := r.Ready(ctx); err != nil {
		add("database", "failing", "the database cannot write")
	} else {
		add("database", "ok", "")
	}
	switch {
	case r.bus.Load() == nil:
		add("events", "ok", "") // one process: nothing to cross
	case r.EventsConnected():
		add("events", "ok", "")
	default:
		r.opts.Log.Warn("runtime: not ready", "part", "events", "err", errEventsDown)
		add("events", "failing", "events from other replicas do not arrive")
	}
	if r.sandboxes() != nil {
		add("sandboxes", "ok", "")
	} else {
		add("sandboxes", "off", "")
	}
	for _, p := range r.extraParts(ctx) {
		detail := ""
		switch p.State {
		case "failing":
			detail = p.Name + " check failed (see the log)"
		case "degraded":
			detail = p.Name + " check failed (see the log); verbs that need it answer 503, the others still work"
		}
		add(p.Name, p.State, detail)
	}
	return rep
}

func (r *Runtime) extraParts(ctx context.Context) []ReadyPart {
	x := &r.readyExtra
	x.mu.Lock()
	list := append([]ReadyCheck(nil), x.list...)
	fresh := !x.at.IsZero() && time.Since(x.at) < readyFor
	states := x.states
	x.mu.Unlock()
	if !fresh {
		states = make(map[string]string, len(list))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range list {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyCheckTimeout)
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- c.Check(cctx) }()
				var err error
				select {
				case err = <-done:
				case <-cctx.Done():
					err = cctx.Err()
				}
				state := "ok"
				switch {
				case err != nil && c.Degrades:
					state = "degraded"
					r.opts.Log.Warn("runtime: degraded", "part", c.Name, "err", err)
				case err != nil:
					state = "failing"
					r.opts.Log.Warn("runtime: not ready", "part", c.Name, "err", err)
				}
				mu.Lock()
				states[c.Name] = state
				mu.Unlock()
			}()
		}
		wg.Wait()
		x.mu.Lock()
		x.states, x.at = states, time.Now()
		x.mu.Unlock()
	}
	out := make([]ReadyPart, 0, len(list))
	for _, c := range list {
		out = append(out, ReadyPart{Name: c.Name, State: states[c.Name]})
	}
	return out
}
