package codemode

import "context"

// RunWasm is Run on the WebAssembly runner (wasm.go), which Run does not
// use yet (docs/code-mode.md, "Isolation"): tests keep it working.
func RunWasm(ctx context.Context, source string, names []string, call Call, lim Limits) (Result, error) {
	lim = lim.withDefaults()
	lim.MemoryBytes = min(lim.MemoryBytes, MaxMemoryBytes)
	js, err := strip(source)
	if err != nil {
		return Result{}, err
	}
	return runWasm(ctx, js, names, call, lim)
}

// ObserveMemory lets tests see each instance's largest linear memory.
func ObserveMemory(f func(bytes uint64)) { observeMemory = f }
