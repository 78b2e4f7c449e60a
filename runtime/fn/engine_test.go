package fn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A restart reuses compiled code from DataDir/fncache instead of compiling
// the module again.
func TestCompiledCodeSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	wasm, raw := modules.TestModule(t, "counter")
	m, err := ParseManifest(raw, DefaultCaps())
	if err != nil {
		t.Fatal(err)
	}
	first, err := New(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cold, err := first.Install(ctx, wasm, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cached, _ := filepath.Glob(filepath.Join(dir, "fncache", "*", "*"))
	if len(cached) == 0 {
		t.Fatalf("nothing cached under %s", filepath.Join(dir, "fncache"))
	}
	second := newEngine(t, Config{DataDir: dir})
	warm, err := second.Load(ctx, wasm, m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := second.Call(ctx, warm, CallRequest{Tool: "count"})
	if err != nil || string(res.Output) != `{"count":1}` {
		t.Fatalf("after restart: %s, %v", res.Output, err)
	}
	t.Logf("compile: cold %v, from cache %v (%d bytes)", cold.CompileTime, warm.CompileTime, warm.Size)
}

func TestNewRefusesAnUnusableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Config{DataDir: file}); err == nil {
		t.Fatal("New accepted a data dir that is a file")
	}
}

func TestOutputAndStderrAreCapped(t *testing.T) {
	caps := DefaultCaps()
	caps.MaxOutputBytes = 1000
	caps.MaxStderrBytes = 500
	e := newEngine(t, Config{Caps: caps})
	p := load(t, e, "packages", "jq")
	t.Run("output", func(t *testing.T) {
		_, err := e.Call(t.Context(), p, CallRequest{Tool: "query", Input: []byte(`{"filter":"[range(1000)]"}`)})
		if !errors.Is(err, ErrOutputTooLarge) || !strings.Contains(err.Error(), "exceeds the limit of 1000 bytes") {
			t.Fatalf("Call = %v, want ErrOutputTooLarge naming 1000 bytes", err)
		}
	})
	t.Run("stderr", func(t *testing.T) {
		res, err := e.Call(t.Context(), p, CallRequest{Tool: "query", Input: []byte(`{"filter":"error(\"x\" * 5000)"}`)})
		if !errors.Is(err, ErrToolFailed) {
			t.Fatalf("Call = %v, want ErrToolFailed", err)
		}
		if kept, _, _ := strings.Cut(res.Stderr, "\n[truncated"); len(kept) != 500 || !strings.HasSuffix(res.Stderr, "[truncated: the limit is 500 bytes]") {
			t.Fatalf("stderr is %d bytes (%q...), want 500 kept and marked", len(res.Stderr), res.Stderr[:40])
		}
	})
}
