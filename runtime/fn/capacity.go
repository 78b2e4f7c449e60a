package fn

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
	"time"
)

// Capacity bounds what all calls of an engine hold at once. Each call's own
// limits (Caps) bound one instance; without these, fifty calls of a 512 MiB
// package would ask the host for 25 GiB together.
type Capacity struct {
	// MaxInstances is how many instances run at once.
	MaxInstances int
	// MemoryMB is the linear memory all running instances may reserve
	// together. A call reserves its whole limit (manifest or request) before
	// it starts, so the sum of what guests can touch never passes it.
	MemoryMB int
	// MaxQueued is how many calls may wait for room; past it a call is
	// refused at once. Negative means none wait.
	MaxQueued int
	// Wait is the longest a call waits for room (or less, when its context
	// ends first) before it is refused.
	Wait time.Duration
}

// DefaultCapacity is used for the zero fields of Config.Capacity: twice the
// processors (at least 8) instances, 1 GiB of guest memory, 64 waiting calls,
// 5 s of waiting.
func DefaultCapacity() Capacity {
	return Capacity{MaxInstances: max(8, 2*goruntime.GOMAXPROCS(0)), MemoryMB: 1024, MaxQueued: 64, Wait: 5 * time.Second}
}

func (c Capacity) orDefault() Capacity {
	d := DefaultCapacity()
	if c.MaxInstances <= 0 {
		c.MaxInstances = d.MaxInstances
	}
	if c.MemoryMB <= 0 {
		c.MemoryMB = d.MemoryMB
	}
	if c.MaxQueued == 0 {
		c.MaxQueued = d.MaxQueued
	}
	c.MaxQueued = max(c.MaxQueued, 0)
	if c.Wait <= 0 {
		c.Wait = d.Wait
	}
	return c
}

// gate hands out instance slots and memory, first come first served, so a
// large call waiting at the head is not starved by small ones behind it.
type gate struct {
	limits Capacity

	mu       sync.Mutex
	running  int
	reserved int // MiB
	queue    []*waiter
}

type waiter struct {
	memMB   int
	granted chan struct{} // closed once the slot and memory are taken for it
}

func newGate(c Capacity) *gate { return &gate{limits: c} }

// acquire takes a slot and memMB of memory, waiting in line up to the
// gate's Wait or until ctx ends. The release it returns must be called once
// the instance is closed.
func (g *gate) acquire(ctx context.Context, memMB int) (func(), error) {
	release := func() { g.release(memMB) }
	g.mu.Lock()
	if len(g.queue) == 0 && g.fitsLocked(memMB) {
		g.takeLocked(memMB)
		g.mu.Unlock()
		return release, nil
	}
	if len(g.queue) >= g.limits.MaxQueued {
		why := fmt.Sprintf("%d calls are already waiting, the most allowed (--function-queue)", len(g.queue))
		if g.limits.MaxQueued == 0 {
			why = "no room, and calls do not wait for it (--function-queue 0)"
		}
		err := g.refusal(memMB, why)
		g.mu.Unlock()
		return nil, err
	}
	w := &waiter{memMB: memMB, granted: make(chan struct{})}
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	timer := time.NewTimer(g.limits.Wait)
	defer timer.Stop()
	why := fmt.Sprintf("no room within %s", g.limits.Wait)
	select {
	case <-w.granted:
		return release, nil
	case <-timer.C:
	case <-ctx.Done():
		why = "the caller gave up while waiting for room"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.granted:
		// Room came at the same moment as the end of the wait: use it.
		return release, nil
	default:
	}
	for i, q := range g.queue {
		if q == w {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			break
		}
	}
	// Leaving the head of the line may let those behind in.
	g.grantLocked()
	return nil, g.refusal(memMB, why)
}

func (g *gate) release(memMB int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.reserved -= memMB
	g.grantLocked()
}

func (g *gate) fitsLocked(memMB int) bool {
	return g.running < g.limits.MaxInstances && g.reserved+memMB <= g.limits.MemoryMB
}

func (g *gate) takeLocked(memMB int) {
	g.running++
	g.reserved += memMB
}

// grantLocked lets in, in order, every waiter at the head that fits.
func (g *gate) grantLocked() {
	for len(g.queue) > 0 && g.fitsLocked(g.queue[0].memMB) {
		w := g.queue[0]
		g.queue = g.queue[1:]
		g.takeLocked(w.memMB)
		close(w.granted)
	}
}

// refusal says what is full, for the caller and the call's record.
func (g *gate) refusal(memMB int, why string) *CapacityError {
	return &CapacityError{RetryAfter: g.limits.Wait, Detail: fmt.Sprintf(
		"%s: %d of %d instances are running and %d of %d MiB of function memory is reserved; this call needs %d MiB (--max-function-instances, --function-memory)",
		why, g.running, g.limits.MaxInstances, g.reserved, g.limits.MemoryMB, memMB)}
}

// load is what the gate holds now: for metrics and tests.
func (g *gate) load() (running, reservedMB, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.reserved, len(g.queue)
}
