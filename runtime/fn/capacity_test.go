package fn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingServer holds every request until release is called, and reports
// each arrival: a call waiting on it holds its instance for as long as the
// test wants, with no timing involved.
type blockingServer struct {
	url      string
	arrivals chan struct{}
	release  func()
}

func startBlockingServer(t *testing.T) *blockingServer {
	t.Helper()
	done := make(chan struct{})
	b := &blockingServer{arrivals: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.arrivals <- struct{}{}
		<-done
		w.Write([]byte("released"))
	}))
	var once sync.Once
	b.release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(b.release)
	b.url = srv.URL
	return b
}

// request is a fetcher call that waits on b.
func (b *blockingServer) request() CallRequest {
	return CallRequest{Tool: "fetch", Input: []byte(`{"url": "` + b.url + `"}`), Origins: []string{b.url}}
}

// holdInstances starts n fetcher calls that wait on b, and returns once all
// n are running; wait gives their errors after b is released.
func holdInstances(t *testing.T, e *Engine, p *Package, b *blockingServer, n int) (wait func() []error) {
	t.Helper()
	return hold(t, e, p, b, n, b.request())
}

// hold starts n calls of req that each fetch from b once, and returns once
// all n are waiting on it.
func hold(t *testing.T, e *Engine, p *Package, b *blockingServer, n int, req CallRequest) (wait func() []error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.Call(context.Background(), p, req)
		})
	}
	for range n {
		<-b.arrivals
	}
	return func() []error { wg.Wait(); return errs }
}

func TestCallsPastCapacityAreRefusedAndRoomComesBack(t *testing.T) {
	tests := []struct {
		name     string
		capacity Capacity
		hold     int
		says     string
	}{
		{"instances", Capacity{MaxInstances: 3, MemoryMB: 1024, MaxQueued: -1}, 3, "no room, and calls do not wait for it (--function-queue 0): 3 of 3 instances are running"},
		// fetcher reserves its manifest's 64 MiB.
		{"memory", Capacity{MaxInstances: 10, MemoryMB: 128, MaxQueued: -1}, 2, "128 of 128 MiB of function memory is reserved; this call needs 64 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, Config{Caps: Caps{MaxMemoryMB: 64}, Capacity: tt.capacity})
			p := load(t, e, "testdata", "fetcher")
			b := startBlockingServer(t)
			wait := holdInstances(t, e, p, b, tt.hold)

			for range 2 {
				_, err := e.Call(context.Background(), p, b.request())
				var ce *CapacityError
				if !errors.Is(err, ErrCapacity) || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("call past capacity = %v, want ErrCapacity saying %q", err, tt.says)
				}
				if ce.RetryAfter != DefaultCapacity().Wait {
					t.Fatalf("RetryAfter = %s, want %s", ce.RetryAfter, DefaultCapacity().Wait)
				}
			}
			b.release()
			for i, err := range wait() {
				if err != nil {
					t.Fatalf("held call %d: %v", i, err)
				}
			}
			if running, mem, queued := e.InUse(); running != 0 || mem != 0 || queued != 0 {
				t.Fatalf("after the calls ended: %d running, %d MiB reserved, %d queued; want all 0", running, mem, queued)
			}
			res, err := e.Call(context.Background(), p, b.request())
			if err != nil || !strings.Contains(string(res.Output), "released") {
				t.Fatalf("call after the others ended: %s, %v", res.Output, err)
			}
		})
	}
}

func TestAQueuedCallRunsWhenRoomFreesAndAFullQueueRefuses(t *testing.T) {
	e := newEngine(t, Config{Caps: Caps{MaxMemoryMB: 64}, Capacity: Capacity{MaxInstances: 1, MemoryMB: 64, MaxQueued: 1, Wait: 10 * time.Minute}})
	p := load(t, e, "testdata", "fetcher")
	b := startBlockingServer(t)
	wait := holdInstances(t, e, p, b, 1)

	queued := make(chan error, 1)
	go func() {
		_, err := e.Call(context.Background(), p, b.request())
		queued <- err
	}()
	for {
		if _, _, q := e.InUse(); q == 1 {
			break
		}
		goruntime.Gosched()
	}
	_, err := e.Call(context.Background(), p, b.request())
	if !errors.Is(err, ErrCapacity) || !strings.Contains(err.Error(), "1 calls are already waiting") {
		t.Fatalf("call past a full queue = %v, want ErrCapacity naming the queue", err)
	}
	b.release()
	if errs := wait(); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued call: %v", err)
	}
}

// TestMemoryHungryCallsPastTheBudgetAreRefused holds four calls that each
// took 48 MiB and wait, with a budget of four 64 MiB reservations, and makes
// sixteen more: each is refused with ErrCapacity, none of them allocates,
// and the heap stays near what the four hold.
// Once the four end, calls run again.
func TestMemoryHungryCallsPastTheBudgetAreRefused(t *testing.T) {
	e := newEngine(t, Config{Caps: Caps{MaxMemoryMB: 64}, Capacity: Capacity{MaxInstances: 50, MemoryMB: 256, MaxQueued: -1}})
	p := load(t, e, "testdata", "hog")
	b := startBlockingServer(t)
	req := CallRequest{Tool: "hog", Input: []byte(`{"url": "` + b.url + `", "mib": 48}`), Origins: []string{b.url}}
	peak := watchRSS(t)
	wait := hold(t, e, p, b, 4, req)

	var wg sync.WaitGroup
	refused := make([]error, 16)
	for i := range refused {
		wg.Go(func() { _, refused[i] = e.Call(context.Background(), p, req) })
	}
	wg.Wait()
	used := peak()
	for i, err := range refused {
		if !errors.Is(err, ErrCapacity) || !strings.Contains(err.Error(), "256 of 256 MiB of function memory is reserved") {
			t.Fatalf("call %d past the budget = %v, want ErrCapacity naming the budget", i, err)
		}
	}
	const bound = 1 << 30 // generous: the four hold 192 MiB; all twenty took 1.8 GiB of heap without the budget
	if used > bound {
		t.Fatalf("resident memory peaked %d MiB above its start; want under %d MiB", used>>20, bound>>20)
	}
	t.Logf("resident peak above start: %d MiB", used>>20)

	b.release()
	for i, err := range wait() {
		if err != nil {
			t.Fatalf("held call %d: %v", i, err)
		}
	}
	res, err := e.Call(context.Background(), p, req)
	if err != nil || !strings.Contains(string(res.Output), `"held_mib":48`) {
		t.Fatalf("call after the others ended: %s, %v", res.Output, err)
	}
}

// TestFiftyMemoryHungryCallsStayWithinTheBudget runs fifty calls that each
// grow to their 64 MiB limit at once: 3.2 GiB together without a budget. With
// 128 MiB of function memory they run two at a time, and the host's heap
// stays far below what they would take together.
func TestFiftyMemoryHungryCallsStayWithinTheBudget(t *testing.T) {
	e := newEngine(t, Config{Caps: Caps{MaxMemoryMB: 128},
		Capacity: Capacity{MaxInstances: 50, MemoryMB: 128, MaxQueued: 50, Wait: 10 * time.Minute}})
	p := load(t, e, "testdata", "membomb")
	peak := watchRSS(t)
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range 50 {
		wg.Go(func() { _, errs[i] = e.Call(context.Background(), p, CallRequest{Tool: "grow", MemoryLimitMB: 64}) })
	}
	wg.Wait()
	used := peak()
	for i, err := range errs {
		if !errors.Is(err, ErrMemoryLimit) {
			t.Fatalf("call %d = %v, want it to run and hit its own memory limit", i, err)
		}
	}
	const bound = 1 << 30 // generous: the budget is 128 MiB, fifty calls would take 3.2 GiB
	if used > bound {
		t.Fatalf("resident memory peaked %d MiB above its start; want under %d MiB", used>>20, bound>>20)
	}
	t.Logf("resident peak above start: %d MiB", used>>20)
}

// watchRSS samples the process's resident memory until the returned
// function is called, which gives the peak above the resident memory at the
// start: what the machine pays, whether Go's heap holds it or not.
func watchRSS(t *testing.T) (peak func() uint64) {
	t.Helper()
	goruntime.GC()
	base := residentBytes(t)
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var top uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			top = max(top, residentBytes(t))
			select {
			case <-stop:
				done <- top - min(top, base)
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// residentBytes reads the resident set size from /proc/self/statm.
func residentBytes(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Error(err)
		return 0
	}
	var size, resident uint64
	fmt.Sscan(string(b), &size, &resident)
	return resident * uint64(os.Getpagesize())
}
