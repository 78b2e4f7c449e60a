package fn

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

var (
	wasmMagic     = []byte("\x00asm")
	wasmVersion1  = []byte{1, 0, 0, 0}
	allowedImport = []string{wasi_snapshot_preview1.ModuleName, HostModule}
)

// Validate checks a package without installing it: the manifest, that wasm
// is a core WebAssembly module that compiles, exports _start and a memory,
// imports only what the engine provides, and fits the manifest's memory limit.
// Errors a user can fix are *FieldError.
func (e *Engine) Validate(ctx context.Context, wasm []byte, m Manifest) error {
	p, err := e.compile(ctx, wasm, m, true)
	if err != nil {
		return err
	}
	_ = p.compiled.Close(ctx)
	return nil
}

// compile checks and compiles a package. trial also instantiates it once
// without running it, which proves every import resolves.
func (e *Engine) compile(ctx context.Context, wasm []byte, m Manifest, trial bool) (*Package, error) {
	if err := m.Check(e.caps); err != nil {
		return nil, err
	}
	if err := checkBinary(wasm, e.caps.MaxWasmBytes); err != nil {
		return nil, err
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, t := range m.Tools {
		schemas[t.Name], _ = resolveSchema(t.InputSchema) // Check resolved it already
	}
	start := time.Now()
	compiled, err := e.runtime.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fieldErr("wasm", "does not compile: %v", err)
	}
	p := &Package{Manifest: m, SHA256: digest(wasm), Size: len(wasm), CompileTime: time.Since(start),
		compiled: compiled, schemas: schemas}
	if err := e.checkModule(ctx, compiled, m, trial); err != nil {
		_ = compiled.Close(ctx)
		return nil, err
	}
	return p, nil
}

func checkBinary(wasm []byte, limit int) error {
	if len(wasm) > limit {
		return fieldErr("wasm", "is %d bytes; the limit is %d", len(wasm), limit)
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], wasmMagic) {
		return fieldErr("wasm", "is not a WebAssembly module (it does not start with \\0asm)")
	}
	if !bytes.Equal(wasm[4:8], wasmVersion1) {
		return fieldErr("wasm", "is not a core WebAssembly 1.0 module (a component? build a WASI preview1 command, e.g. GOOS=wasip1 GOARCH=wasm)")
	}
	return nil
}

func (e *Engine) checkModule(ctx context.Context, c wazero.CompiledModule, m Manifest, trial bool) error {
	if err := e.checkImports(c); err != nil {
		return err
	}
	start, ok := c.ExportedFunctions()["_start"]
	if !ok || len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0 {
		return fieldErr("wasm", "does not export _start() as a WASI command must; build a program (package main), not a library")
	}
	mem, ok := c.ExportedMemories()["memory"]
	if !ok {
		return fieldErr("wasm", `does not export its memory as "memory", which WASI needs`)
	}
	limit := effectiveMemoryMB(m.Limits, e.caps)
	if need := uint64(mem.Min()) * wasmPage; need > uint64(limit)<<20 {
		return fieldErr("limits.memory_mb", "is %d, but the module needs %d MiB at start", limit, (need+(1<<20)-1)>>20)
	}
	if !trial {
		return nil
	}
	// A module's own start section runs even without start functions: bound
	// it like a call, so a hostile module cannot hang the install.
	tctx, cancel := context.WithTimeout(ctx, effectiveTimeout(m.Limits, e.caps))
	defer cancel()
	tctx = experimental.WithMemoryAllocator(tctx, newLimitedMemory(uint64(limit)<<20, nil))
	mod, err := e.runtime.InstantiateModule(tctx, c, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return fieldErr("wasm", "cannot be instantiated: %v", err)
	}
	return mod.Close(ctx)
}

// checkImports refuses any import the engine does not provide, naming it, so
// a package fails at install rather than at its first call.
func (e *Engine) checkImports(c wazero.CompiledModule) error {
	if len(c.ImportedMemories()) > 0 {
		return fieldErr("wasm", "imports a memory; a package must define its own")
	}
	for _, f := range c.ImportedFunctions() {
		modName, name, _ := f.Import()
		if !slices.Contains(allowedImport, modName) {
			return fieldErr("wasm", "imports %s.%s; only %s and %s.%s are available",
				modName, name, wasi_snapshot_preview1.ModuleName, HostModule, FetchImport)
		}
		host := e.runtime.Module(modName)
		def, ok := host.ExportedFunctionDefinitions()[name]
		if !ok {
			return fieldErr("wasm", "imports %s.%s, which the engine does not provide", modName, name)
		}
		if !sameSignature(def, f) {
			return fieldErr("wasm", "imports %s.%s as %s; the engine provides %s",
				modName, name, signature(f), signature(def))
		}
	}
	return nil
}

func sameSignature(a, b api.FunctionDefinition) bool {
	return bytes.Equal(a.ParamTypes(), b.ParamTypes()) && bytes.Equal(a.ResultTypes(), b.ResultTypes())
}

func signature(f api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(out, ", ") + ")"
	}
	return names(f.ParamTypes()) + " -> " + names(f.ResultTypes())
}

func effectiveMemoryMB(l Limits, caps Caps) int {
	if l.MemoryMB > 0 {
		return l.MemoryMB
	}
	return caps.DefaultMemoryMB
}

func effectiveTimeout(l Limits, caps Caps) time.Duration {
	if l.TimeoutMS > 0 {
		return time.Duration(l.TimeoutMS) * time.Millisecond
	}
	return caps.DefaultTimeout
}
