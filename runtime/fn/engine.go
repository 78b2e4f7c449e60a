package fn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/subako/subako/runtime/egress"
)

// Engine compiles and runs function packages. It holds one wazero runtime for
// its whole life: closing a runtime drops its compiled code, and recompiling a Go
// module costs seconds. It is safe for concurrent use.
type Engine struct {
	caps      Caps
	gate      *gate
	runtime   wazero.Runtime
	transport http.RoundTripper

	mu       sync.RWMutex
	packages map[string]*Package // by name@version

	native NativeConfig // how native packages are sandboxed (native.go)

	// onFree, when set (by tests), sees each instance's memory as it is closed.
	onFree func([]byte)
}

// Package is an installed package: its manifest and compiled code.
type Package struct {
	Manifest    Manifest
	SHA256      string        // of the module's bytes
	Size        int           // of the module, in bytes
	CompileTime time.Duration // how long Install or Load spent compiling

	compiled wazero.CompiledModule
	schemas  map[string]*jsonschema.Resolved
	bundle   *NativeBundle // a native package's command and files; nil for WebAssembly
}

// Engine names what runs the package: EngineWasm or EngineNative.
func (p *Package) Engine() string {
	if p.bundle != nil {
		return EngineNative
	}
	return EngineWasm
}

// Key is name@version, the package's identity.
func (p *Package) Key() string { return key(p.Manifest.Name, p.Manifest.Version) }

func key(name, version string) string { return name + "@" + version }

// New starts an engine. With cfg.DataDir set, compiled code is cached in
// DataDir/fncache and reused after a restart.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	caps := cfg.Caps.orDefault()
	capacity := cfg.Capacity.orDefault()
	if capacity.MemoryMB < caps.MaxMemoryMB {
		// A call allowed more than the whole budget could never start.
		return nil, fmt.Errorf("fn: function memory budget of %d MiB is below the %d MiB one call may get", capacity.MemoryMB, caps.MaxMemoryMB)
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(caps.MaxMemoryMB * (1 << 20) / wasmPage))
	if cfg.DataDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(cfg.DataDir, "fncache"))
		if err != nil {
			return nil, fmt.Errorf("fn: open compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("fn: instantiate wasi: %w", err)
	}
	if err := instantiateHost(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	tr := cfg.Transport
	if tr == nil {
		// Granted origins are names; the guard judges the address each one
		// resolves to at every hop, so an origin cannot lead inside.
		tr = egress.Transport(cfg.AllowPrivate)
	}
	return &Engine{caps: caps, gate: newGate(capacity), runtime: r, transport: tr, packages: map[string]*Package{}}, nil
}

// Caps returns the limits the engine enforces.
func (e *Engine) Caps() Caps { return e.caps }

// Capacity returns the limits on all calls together.
func (e *Engine) Capacity() Capacity { return e.gate.limits }

// InUse is what runs now: instances, MiB of memory they reserved, and calls
// waiting for room.
func (e *Engine) InUse() (running, reservedMB, queued int) { return e.gate.load() }

// Close releases every compiled package. Calls in flight end with an error.
func (e *Engine) Close(ctx context.Context) error {
	if err := e.runtime.Close(ctx); err != nil {
		return fmt.Errorf("fn: close runtime: %w", err)
	}
	return nil
}

// Install validates and compiles a new package and keeps it loaded. The same
// name and version twice is refused with a *DuplicateVersionError.
func (e *Engine) Install(ctx context.Context, wasm []byte, m Manifest) (*Package, error) {
	if _, ok := e.Get(m.Name, m.Version); ok {
		return nil, &DuplicateVersionError{Name: m.Name, Version: m.Version}
	}
	p, err := e.build(ctx, wasm, m, true)
	if err != nil {
		return nil, err
	}
	return p, e.register(ctx, p, false)
}

// Load compiles a package that was installed before, e.g. from the store at
// start, and keeps it loaded. Loading the same bytes again returns the loaded
// package; different bytes under a loaded name and version are refused.
func (e *Engine) Load(ctx context.Context, wasm []byte, m Manifest) (*Package, error) {
	if p, ok := e.Get(m.Name, m.Version); ok {
		if p.SHA256 == digest(wasm) {
			return p, nil
		}
		return nil, &DuplicateVersionError{Name: m.Name, Version: m.Version}
	}
	p, err := e.build(ctx, wasm, m, false)
	if err != nil {
		return nil, err
	}
	return p, e.register(ctx, p, true)
}

func (e *Engine) register(ctx context.Context, p *Package, sameOK bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.packages[p.Key()]; ok {
		// Lost a race with another Install or Load of the same version.
		if p.compiled != nil {
			_ = p.compiled.Close(ctx)
		}
		if sameOK && old.SHA256 == p.SHA256 {
			*p = *old
			return nil
		}
		return &DuplicateVersionError{Name: p.Manifest.Name, Version: p.Manifest.Version}
	}
	e.packages[p.Key()] = p
	return nil
}

// Get returns a loaded package.
func (e *Engine) Get(name, version string) (*Package, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	p, ok := e.packages[key(name, version)]
	return p, ok
}

// Packages lists the loaded packages by name, then version.
func (e *Engine) Packages() []*Package {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]*Package, 0, len(e.packages))
	for _, p := range e.packages {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Unload drops a package's compiled code. Calls already running finish.
func (e *Engine) Unload(ctx context.Context, name, version string) error {
	e.mu.Lock()
	p, ok := e.packages[key(name, version)]
	delete(e.packages, key(name, version))
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("fn: unload %s: not loaded", key(name, version))
	}
	if p.compiled == nil {
		return nil // a native package holds no compiled code
	}
	if err := p.compiled.Close(ctx); err != nil {
		return fmt.Errorf("fn: unload %s: %w", p.Key(), err)
	}
	return nil
}

// build compiles a WebAssembly package, or reads a native package's bundle
// (its "module") when its manifest names the native engine.
func (e *Engine) build(ctx context.Context, module []byte, m Manifest, trial bool) (*Package, error) {
	if m.Engine == EngineNative {
		return e.loadNative(module, m)
	}
	return e.compile(ctx, module, m, trial)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
