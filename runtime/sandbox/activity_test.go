package sandbox_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// countingStore counts the writes the manager makes.
type countingStore struct {
	*sandbox.MemStore
	puts atomic.Int64
}

func (s *countingStore) Put(ctx context.Context, rec sandbox.Record) error {
	s.puts.Add(1)
	return s.MemStore.Put(ctx, rec)
}

// A warm exec writes nothing; the last activity reaches the Store at the next
// Tick, once, and a restart bills the machine from what was recorded.
func TestWarmExecsWriteNothingUntilTick(t *testing.T) {
	store := &countingStore{MemStore: sandbox.NewMemStore()}
	e := newEnv(t, func(c *sandbox.Config) { c.Store = store })
	e.store = store.MemStore
	e.exec("true")
	started := e.wantState(sandbox.StateRunning)
	before := store.puts.Load()
	for range 5 {
		e.clock.Advance(10 * time.Second)
		e.exec("true")
	}
	if n := store.puts.Load() - before; n != 0 {
		t.Fatalf("5 warm execs wrote the sandbox record %d times, want 0", n)
	}
	if rec := e.rec(); !rec.LastActiveAt.Equal(started.LastActiveAt) {
		t.Fatalf("the record moved without a Tick: %v", rec.LastActiveAt)
	}
	e.tick(time.Second)
	if n := store.puts.Load() - before; n != 1 {
		t.Fatalf("a Tick after 5 execs wrote %d times, want 1", n)
	}
	if got, want := e.rec().LastActiveAt, started.LastActiveAt.Add(50*time.Second); !got.Equal(want) {
		t.Fatalf("recorded last activity %v, want the last exec's %v", got, want)
	}
	e.tick(time.Second)
	if n := store.puts.Load() - before; n != 1 {
		t.Fatalf("a Tick with no exec since wrote again (%d writes)", n)
	}

	// A crash now: the next server bills until the recorded last activity
	// plus the idle timeout, not until it came back an hour later.
	crashed := e.mgr
	t.Cleanup(func() { crashed.Close(context.Background()) })
	e.mgr = e.manager()
	e.clock.Advance(time.Hour)
	if err := e.mgr.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := e.wantState(sandbox.StateSuspended)
	if want := (50*time.Second + sandbox.DefaultIdleTimeout).Seconds(); rec.MachineSeconds != want {
		t.Errorf("machine seconds after a crash = %v, want %v", rec.MachineSeconds, want)
	}
}
