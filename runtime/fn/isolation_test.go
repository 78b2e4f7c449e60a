package fn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fresh instance per call: a global the guest increments is 1 every time,
// in sequence and at once.
func TestEveryCallGetsAFreshInstance(t *testing.T) {
	e := sharedEngine(t)
	p := load(t, e, "testdata", "counter")
	check := func(t *testing.T) {
		res, err := call(t, e, p, CallRequest{Tool: "count"})
		if err != nil {
			t.Error(err)
			return
		}
		if string(res.Output) != `{"count":1}` {
			t.Errorf("output %s, want {\"count\":1}: state leaked between calls", res.Output)
		}
	}
	t.Run("sequential", func(t *testing.T) {
		for range 3 {
			check(t)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { check(t) })
		}
		wg.Wait()
	})
}

func TestGuestSeesNoHostFilesEnvOrArgs(t *testing.T) {
	e := sharedEngine(t)
	p := load(t, e, "testdata", "readfile")
	res, err := call(t, e, p, CallRequest{Tool: "read", Input: json.RawMessage(`{"paths":["/proc/self/environ","../../etc/hostname","."]}`)})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Attempts []struct {
			Path string
			Read bool
		}
		RootEntries int      `json:"root_entries"`
		Env         []string `json:"env"`
		Args        []string `json:"args"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Attempts) != 4 {
		t.Fatalf("attempts %+v, want 4", out.Attempts)
	}
	for _, a := range out.Attempts {
		if a.Read {
			t.Errorf("guest read %s", a.Path)
		}
	}
	if out.RootEntries != 0 || len(out.Env) != 0 {
		t.Errorf("guest saw %d entries in / and environment %q, want none", out.RootEntries, out.Env)
	}
	if strings.Join(out.Args, " ") != "readfile" {
		t.Errorf("args %q, want only the program name", out.Args)
	}
}

func TestInfiniteLoopStopsAtTheDeadline(t *testing.T) {
	e := sharedEngine(t)
	p := load(t, e, "testdata", "loop")
	const deadline = 300 * time.Millisecond
	res, err := call(t, e, p, CallRequest{Tool: "spin", Timeout: deadline})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Call = %v, want ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "stopped at the deadline of 300ms") {
		t.Fatalf("error %q does not name the deadline", err)
	}
	if res.Duration < deadline {
		t.Fatalf("stopped after %v, before its deadline", res.Duration)
	}
}

// The manifest's timeout binds when the request asks for more.
func TestRequestCannotRaiseTheManifestTimeout(t *testing.T) {
	e := sharedEngine(t)
	wasm, raw := modules.TestModule(t, "loop")
	m, err := ParseManifest(raw, e.Caps())
	if err != nil {
		t.Fatal(err)
	}
	m.Version, m.Limits.TimeoutMS = "1.0.0-short", 200
	p, err := e.Load(context.Background(), wasm, m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = call(t, e, p, CallRequest{Tool: "spin", Timeout: time.Hour})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "deadline of 200ms") {
		t.Fatalf("Call = %v, want the manifest's 200ms", err)
	}
}

// A server cap below the defaults lowers them too.
func TestServerCapLowersDefaults(t *testing.T) {
	caps := Caps{MaxTimeout: 2 * time.Second, MaxMemoryMB: 32}.orDefault()
	if caps.DefaultTimeout != 2*time.Second || caps.DefaultMemoryMB != 32 {
		t.Fatalf("defaults %v / %d MiB, want 2s / 32 MiB", caps.DefaultTimeout, caps.DefaultMemoryMB)
	}
}

func TestMemoryBombFailsCleanly(t *testing.T) {
	e := sharedEngine(t)
	p := load(t, e, "testdata", "membomb")
	tests := []struct {
		name  string
		ask   int
		limit string
	}{
		{"manifest limit", 0, "the limit is 64 MiB"},
		{"lower request", 32, "the limit is 32 MiB"},
		{"request cannot raise it", 4096, "the limit is 64 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, e, p, CallRequest{Tool: "grow", MemoryLimitMB: tt.ask})
			if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), tt.limit) {
				t.Fatalf("Call = %v, want ErrMemoryLimit saying %q", err, tt.limit)
			}
		})
	}
	// The engine is still usable after a guest ran out of memory.
	res, err := call(t, e, load(t, e, "testdata", "counter"), CallRequest{Tool: "count"})
	if err != nil || string(res.Output) != `{"count":1}` {
		t.Fatalf("after the bomb: %s, %v", res.Output, err)
	}
}

func TestCallRefusesBadToolAndInput(t *testing.T) {
	e := sharedEngine(t)
	p := load(t, e, "packages", "jq")
	tests := []struct {
		name   string
		req    CallRequest
		reason error
		want   string
	}{
		{"unknown tool", CallRequest{Tool: "eval"}, ErrUnknownTool, "jq@1.0.0 offers [query]"},
		{"input not JSON", CallRequest{Tool: "query", Input: json.RawMessage(`{filter`)}, ErrInvalidInput, "not valid JSON"},
		{"input against schema", CallRequest{Tool: "query", Input: json.RawMessage(`{"input":1}`)}, ErrInvalidInput, "filter"},
		{"input too large", CallRequest{Tool: "query", Input: json.RawMessage(`{"filter":".","input":"` + strings.Repeat("x", 1<<20) + `"}`)},
			ErrInvalidInput, "the limit is 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, e, p, tt.req)
			if !errors.Is(err, tt.reason) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Call = %v, want %v saying %q", err, tt.reason, tt.want)
			}
		})
	}
}

func TestBadOriginIsRefusedBeforeRunning(t *testing.T) {
	e := sharedEngine(t)
	p := load(t, e, "testdata", "counter")
	_, err := call(t, e, p, CallRequest{Tool: "count", Origins: []string{"https://ok.example", "https://x.example/path"}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "origins[1]" {
		t.Fatalf("Call = %v, want a FieldError on origins[1]", err)
	}
}
