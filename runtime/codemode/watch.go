package codemode

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// The memory bound. goja runs in-process (see docs/code-mode.md, "Isolation"),
// so there is no per-instance heap to cap: the watcher samples the Go heap's
// object bytes every memoryTick and, when they have grown past the program's
// MemoryBytes since it started, collects garbage and looks again; if the live
// heap is still past the bound, the program is interrupted with
// memory_exceeded. The growth is the process's, so allocations of other work
// running at the same time count towards it (a false stop, never a missed one).
const (
	memoryTick = 5 * time.Millisecond
	// confirmGap spaces forced collections when a program churns garbage but
	// keeps little: a collection every tick would cost the whole server.
	confirmGap = 100 * time.Millisecond
)

const heapObjects = "/memory/classes/heap/objects:bytes"

func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// watch interrupts the VM at the deadline or past the memory bound; stop
// ends the watcher.
func (r *run) watch(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	base := heapBytes()
	go func() {
		t := time.NewTicker(memoryTick)
		defer t.Stop()
		var lastConfirm time.Time
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				r.vm.Interrupt(r.stopped(ctx))
				return
			case <-t.C:
				if own := r.clock.own(); own > r.lim.Deadline {
					r.vm.Interrupt(&Error{CodeDeadline, fmt.Sprintf("the program ran past its deadline of %s", r.lim.Deadline)})
					return
				}
				if heapBytes()-base <= r.lim.MemoryBytes || time.Since(lastConfirm) < confirmGap {
					continue
				}
				runtime.GC()
				lastConfirm = time.Now()
				if grown := heapBytes() - base; grown > r.lim.MemoryBytes {
					r.vm.Interrupt(&Error{CodeMemory, fmt.Sprintf("the program holds more than its memory limit of %s (%d MiB grown)", bytesText(int(r.lim.MemoryBytes)), grown>>20)})
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// stopped is why a run whose context ended stops.
func (r *run) stopped(ctx context.Context) *Error {
	switch {
	case ctx.Err() == context.DeadlineExceeded && r.lim.CallWait > 0:
		return &Error{CodeDeadline, fmt.Sprintf("the program ran past its deadline of %s and its calls' wait of %s", r.lim.Deadline, r.lim.CallWait)}
	case ctx.Err() == context.DeadlineExceeded:
		return &Error{CodeDeadline, fmt.Sprintf("the program ran past its deadline of %s", r.lim.Deadline)}
	default:
		return &Error{CodeDeadline, "the program was stopped: its caller went away"}
	}
}

// clock measures a program's own time: since it started, less the time its
// $ calls took (Limits.CallWait). Calls run on the program's goroutine, one
// at a time; the watcher reads from its own.
type clock struct {
	start time.Time
	mu    sync.Mutex
	inAt  time.Time     // when the call in progress began; zero outside calls
	spent time.Duration // finished calls' time
}

func newClock() *clock { return &clock{start: time.Now()} }

func (c *clock) enter() { c.mu.Lock(); c.inAt = time.Now(); c.mu.Unlock() }

func (c *clock) leave() {
	c.mu.Lock()
	c.spent += time.Since(c.inAt)
	c.inAt = time.Time{}
	c.mu.Unlock()
}

// own is the program's time outside calls so far.
func (c *clock) own() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	spent := c.spent
	if !c.inAt.IsZero() {
		spent += now.Sub(c.inAt)
	}
	return now.Sub(c.start) - spent
}
