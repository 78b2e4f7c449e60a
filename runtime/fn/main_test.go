package fn

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/subako/subako/runtime/fn/fntest"
)

var modules fntest.Modules

func TestMain(m *testing.M) {
	var err error
	if modules, err = fntest.BuildAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// shared is one engine for the tests that need no hooks: installing each
// package once keeps the suite fast, as a server would.
var shared struct {
	once   sync.Once
	engine *Engine
	err    error
	mu     sync.Mutex
}

func sharedEngine(t testing.TB) *Engine {
	t.Helper()
	shared.once.Do(func() {
		// The tests' servers listen on loopback.
		shared.engine, shared.err = New(context.Background(), Config{DataDir: modules.DataDir, AllowPrivate: true})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.engine
}

func newEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = modules.DataDir
	}
	cfg.AllowPrivate = true // the tests' servers listen on loopback
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// load returns a shipped package ("packages") or test module ("testdata")
// installed in e, installing it on first use.
func load(t testing.TB, e *Engine, kind, name string) *Package {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var wasm, raw []byte
	if kind == "packages" {
		wasm, raw = modules.Package(t, name)
	} else {
		wasm, raw = modules.TestModule(t, name)
	}
	m, err := ParseManifest(raw, e.Caps())
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), wasm, m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func call(t testing.TB, e *Engine, p *Package, req CallRequest) (CallResult, error) {
	t.Helper()
	return e.Call(context.Background(), p, req)
}
