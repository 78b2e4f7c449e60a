package fn

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

func testManifest(name, version string) Manifest {
	return Manifest{Name: name, Version: version, Tools: []Tool{{
		Name: "run", Description: "Runs.", InputSchema: []byte(`{"type":"object"}`),
	}}}
}

func TestValidateRefusesBadModules(t *testing.T) {
	e := sharedEngine(t)
	i32 := api.ValueTypeI32
	tests := []struct {
		name string
		wasm []byte
		m    Manifest
		want string // in the error
	}{
		{"not wasm", []byte("#!/bin/sh\necho hi\n"), testManifest("a", "1.0.0"), "not a WebAssembly module"},
		{"empty", nil, testManifest("a", "1.0.0"), "not a WebAssembly module"},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), testManifest("a", "1.0.0"), "not a core WebAssembly 1.0 module"},
		{"garbage after header", []byte("\x00asm\x01\x00\x00\x00\xff\xff"), testManifest("a", "1.0.0"), "does not compile"},
		{"no _start", wasmSpec{exportMemory: true}.build(), testManifest("a", "1.0.0"), "does not export _start"},
		{"no memory export", wasmSpec{exportStart: true}.build(), testManifest("a", "1.0.0"), `does not export its memory as "memory"`},
		{"import from env", wasmSpec{exportStart: true, exportMemory: true,
			imports: []wasmImport{{module: "env", name: "system"}}}.build(),
			testManifest("a", "1.0.0"), "imports env.system; only wasi_snapshot_preview1 and subako.http_fetch"},
		{"unknown host import", wasmSpec{exportStart: true, exportMemory: true,
			imports: []wasmImport{{module: "subako", name: "exec"}}}.build(),
			testManifest("a", "1.0.0"), "imports subako.exec, which the engine does not provide"},
		{"wrong http_fetch signature", wasmSpec{exportStart: true, exportMemory: true,
			imports: []wasmImport{{module: "subako", name: "http_fetch", params: []byte{i32}, results: []byte{i32}}}}.build(),
			testManifest("a", "1.0.0"), "imports subako.http_fetch as (i32) -> (i32); the engine provides (i32, i32, i32, i32) -> (i32)"},
		{"memory over the manifest's limit", wasmSpec{exportStart: true, exportMemory: true, memoryPages: 32}.build(),
			Manifest{Name: "a", Version: "1.0.0", Tools: testManifest("a", "1.0.0").Tools, Limits: Limits{MemoryMB: 1}},
			"limits.memory_mb: is 1, but the module needs 2 MiB at start"},
		{"start section that never ends", wasmSpec{exportStart: true, exportMemory: true, startLoops: true}.build(),
			Manifest{Name: "a", Version: "1.0.0", Tools: testManifest("a", "1.0.0").Tools, Limits: Limits{TimeoutMS: 100}},
			"cannot be instantiated"},
		{"bad manifest", wasmSpec{exportStart: true, exportMemory: true}.build(), testManifest("A", "1.0.0"), "name: must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.Validate(context.Background(), tt.wasm, tt.m)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a *FieldError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %q, want it to say %q", err, tt.want)
			}
			if _, ok := e.Get(tt.m.Name, tt.m.Version); ok {
				t.Fatal("a refused package was left loaded")
			}
		})
	}
}

func TestValidateAcceptsMinimalCommand(t *testing.T) {
	e := sharedEngine(t)
	wasm := wasmSpec{exportStart: true, exportMemory: true,
		imports: []wasmImport{{module: "subako", name: "http_fetch",
			params:  []byte{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32},
			results: []byte{api.ValueTypeI32}}}}.build()
	if err := e.Validate(context.Background(), wasm, testManifest("minimal", "1.0.0")); err != nil {
		t.Fatal(err)
	}
}

func TestInstallRefusesDuplicateVersion(t *testing.T) {
	e := newEngine(t, Config{})
	ctx := context.Background()
	wasm := wasmSpec{exportStart: true, exportMemory: true}.build()
	m := testManifest("dup", "1.2.3")
	p, err := e.Install(ctx, wasm, m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Size != len(wasm) || len(p.SHA256) != 64 || p.CompileTime <= 0 {
		t.Fatalf("package facts not recorded: size %d sha %q compile %v", p.Size, p.SHA256, p.CompileTime)
	}
	_, err = e.Install(ctx, wasm, m)
	var dup *DuplicateVersionError
	if !errors.Is(err, ErrDuplicateVersion) || !errors.As(err, &dup) || dup.Version != "1.2.3" {
		t.Fatalf("second Install = %v, want a DuplicateVersionError for 1.2.3", err)
	}
	if again, err := e.Load(ctx, wasm, m); err != nil || again != p {
		t.Fatalf("Load of the same bytes = %v, %v; want the loaded package", again, err)
	}
	other := wasmSpec{exportStart: true, exportMemory: true, memoryPages: 2}.build()
	if _, err := e.Load(ctx, other, m); !errors.Is(err, ErrDuplicateVersion) {
		t.Fatalf("Load of other bytes under a loaded version = %v, want ErrDuplicateVersion", err)
	}
	if _, err := e.Install(ctx, wasm, testManifest("dup", "1.2.4")); err != nil {
		t.Fatalf("a new version must install: %v", err)
	}
	if got := len(e.Packages()); got != 2 {
		t.Fatalf("Packages() has %d, want 2", got)
	}
	if err := e.Unload(ctx, "dup", "1.2.3"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Get("dup", "1.2.3"); ok {
		t.Fatal("Unload left the package loaded")
	}
}

func TestCallOfSilentCommandIsBadOutput(t *testing.T) {
	e := newEngine(t, Config{})
	p, err := e.Install(context.Background(), wasmSpec{exportStart: true, exportMemory: true}.build(), testManifest("silent", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Call(context.Background(), p, CallRequest{Tool: "run"})
	if !errors.Is(err, ErrBadOutput) || !strings.Contains(err.Error(), "stdout is not one JSON value (0 bytes)") {
		t.Fatalf("Call = %v, want ErrBadOutput for empty stdout", err)
	}
}
