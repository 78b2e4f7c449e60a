package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// CapacityError refuses an exec that would start a sandbox while the server
// already runs its limit (Config.MaxRunning, --max-sandboxes). Nothing
// started: the same exec may well pass after RetryAfter, once an idle
// sandbox was suspended.
type CapacityError struct {
	Running, Max int
	RetryAfter   time.Duration
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("%d of %d sandboxes are running, the server's limit (--max-sandboxes): this one cannot start until another is suspended",
		e.Running, e.Max)
}

// DiskFullRetry is the Retry-After of a start refused for a nearly full
// data disk (*DiskFullError): room comes back when an operator acts, or
// archives are deleted, not on a timer.
const DiskFullRetry = time.Minute

// slots counts running machines by sandbox id. A slot is taken before a
// machine starts (so a refused start costs no restore) and given back when
// the machine stops.
type slots struct {
	mu      sync.Mutex
	max     int // 0: no limit
	running map[string]bool
}

func (s *slots) take(id string) (running int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[id] {
		return len(s.running), true
	}
	if s.max > 0 && len(s.running) >= s.max {
		return len(s.running), false
	}
	s.running[id] = true
	return len(s.running), true
}

func (s *slots) give(id string) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// slotDriver gives a machine's slot back when the machine stops, however
// it is stopped (suspension, a failed start, shutdown).
type slotDriver struct {
	Driver
	slots *slots
}

func (d slotDriver) Start(ctx context.Context, spec Spec) (Machine, error) {
	m, err := d.Driver.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &slotMachine{Machine: m, release: func() { d.slots.give(spec.ID) }}, nil
}

type slotMachine struct {
	Machine
	once    sync.Once
	release func()
}

func (m *slotMachine) Stop() error {
	err := m.Machine.Stop()
	m.once.Do(m.release)
	return err
}

// reserve takes b's slot before its machine starts (b.mu held), or says how
// long until one may be free: the soonest an idle sandbox is suspended. A
// nearly full data disk refuses every start first.
func (m *Manager) reserve(b *box) error {
	if err := m.checkFreeDisk("start a sandbox"); err != nil {
		return err
	}
	running, ok := m.slots.take(b.id)
	if ok {
		return nil
	}
	return &CapacityError{Running: running, Max: m.slots.max, RetryAfter: m.nextSuspension(b)}
}

// capacityRetryFloor covers the lifecycle's tick: a sandbox idle for its
// timeout is suspended at the next tick, a few seconds later.
const capacityRetryFloor = 5 * time.Second

// nextSuspension estimates when a running sandbox will next be suspended:
// the earliest idle deadline among sandboxes with no exec running. Boxes
// busy starting or suspending (their lock held) are skipped, never waited for.
func (m *Manager) nextSuspension(self *box) time.Duration {
	m.mu.Lock()
	boxes := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		if b != self {
			boxes = append(boxes, b)
		}
	}
	m.mu.Unlock()
	soonest, idle := m.cfg.IdleTimeout, false
	for _, b := range boxes {
		if !b.mu.TryLock() {
			continue
		}
		if b.machine != nil && b.active == 0 {
			// Each sandbox's own idle timeout (its grant's), not the default.
			at := b.rec.LastActiveAt.Add(m.idleTimeout(b)).Sub(m.now())
			if !idle || at < soonest {
				soonest, idle = at, true
			}
		}
		b.mu.Unlock()
	}
	return max(soonest, 0) + capacityRetryFloor
}
