package codemode

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako/runtime/codemode/internal/wire"
)

// The WebAssembly runner: each program in a fresh instance of the guest
// module (runtime/codemode/guest, goja built for GOOS=wasip1) on wazero. The
// module is compiled once per process and shared; instances are per program.
//
// Run does not use it yet: on this project's loaded test machine goja in the
// guest runs JavaScript 10-80 times slower than in-process (Go's wasm code
// and the deadline checks WithCloseOnContextDone compiles in), an empty
// program costs 100-400 ms, and an allocation bomb reaches its memory cap
// after 10-30 s, past the default 10 s deadline (docs/code-mode.md,
// "Isolation"). Its tests (wasm_test.go) keep it working.
//
// Bounds: the instance's linear memory is capped at the program's
// MemoryBytes plus guestBaseBytes (the Go runtime and goja of the guest,
// measured: see docs/code-mode.md "Isolation"); a grow past it is refused
// and the run ends with memory_exceeded. The deadline closes the instance
// (WithCloseOnContextDone). Calls are counted here, on the host side.
const (
	// guestBaseBytes is what the guest needs before the program allocates
	// anything: Go's runtime and heap arenas, goja, the parsed program.
	// Measured: 12 MiB of linear memory for an empty program
	// (TestWasmAllocationBombLeavesServerMemoryBounded logs it).
	guestBaseBytes = 24 << 20
	// MaxMemoryBytes is the most a program may be given.
	MaxMemoryBytes = 1 << 30
	wasmPage       = 64 << 10
	// maxGuestStderr keeps the end of a crashed guest's report.
	maxGuestStderr = 8 << 10
)

// guest is where the module comes from, and the engine built from it.
var guest struct {
	mu       sync.Mutex
	wasm     []byte
	load     func() ([]byte, error)
	cacheDir string
	eng      *engine
}

// SetGuest gives the runner its guest module (built with
// GOOS=wasip1 GOARCH=wasm go build ./runtime/codemode/guest). It takes
// effect for the first program run after.
func SetGuest(wasm []byte) {
	guest.mu.Lock()
	defer guest.mu.Unlock()
	guest.wasm, guest.load = wasm, nil
}

// SetGuestLoader gives a function that produces the guest module when the
// first program runs (tests build it on demand: codemodetest).
func SetGuestLoader(load func() ([]byte, error)) {
	guest.mu.Lock()
	defer guest.mu.Unlock()
	if guest.wasm == nil {
		guest.load = load
	}
}

// SetCacheDir keeps the guest's compiled code in dir, so a restart does not
// compile it again (a cold compile takes seconds). Call it before the first
// program runs.
func SetCacheDir(dir string) {
	guest.mu.Lock()
	defer guest.mu.Unlock()
	guest.cacheDir = dir
}

// Warm compiles the guest now, so the first program does not wait for it.
func Warm(ctx context.Context) error {
	_, err := loadEngine(ctx)
	return err
}

// ErrNoGuest is returned by the runner when no guest module was given.
var ErrNoGuest = errors.New("codemode: the WebAssembly runner has no guest module: give it with SetGuest or SetGuestLoader (tests: codemodetest.Install)")

type engine struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

func loadEngine(ctx context.Context) (*engine, error) {
	guest.mu.Lock()
	defer guest.mu.Unlock()
	if guest.eng != nil {
		return guest.eng, nil
	}
	wasm := guest.wasm
	if wasm == nil && guest.load != nil {
		b, err := guest.load()
		if err != nil {
			return nil, fmt.Errorf("codemode: build the guest module: %w", err)
		}
		wasm = b
	}
	if wasm == nil {
		return nil, ErrNoGuest
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32((MaxMemoryBytes + guestBaseBytes) / wasmPage))
	if guest.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(guest.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("codemode: open compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	// The runtime lives as long as the process: closing it would drop the
	// compiled code. Context values of this ctx do not reach later runs.
	ctx = context.WithoutCancel(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("codemode: instantiate wasi: %w", err)
	}
	_, err := rt.NewHostModuleBuilder(wire.Module).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostCall), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
		WithParameterNames("req_ptr", "req_len", "resp_ptr", "resp_cap").
		Export(wire.CallImport).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("ptr", "len").
		Export(wire.LogImport).
		Instantiate(ctx)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("codemode: instantiate host module: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("codemode: compile the guest module: %w", err)
	}
	guest.eng = &engine{rt: rt, compiled: compiled}
	return guest.eng, nil
}

// observeMemory, when set (tests), sees each instance's largest linear memory.
var observeMemory func(bytes uint64)

// runKey carries a run's state in the context wazero hands the imports.
type runKey struct{}

// wasmRun is one program's host-side state.
type wasmRun struct {
	ctx     context.Context // the program's, with its deadline; $ calls get it
	lim     Limits
	call    Call
	calls   int
	log     logBuf
	pending []byte // an answer longer than the guest's buffer, to collect
	stop    *Error // why the host stopped the instance
}

// runWasm runs stripped JavaScript in a fresh guest instance.
func runWasm(ctx context.Context, js string, names []string, call Call, lim Limits) (Result, error) {
	eng, err := loadEngine(ctx)
	if err != nil {
		return Result{}, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, lim.Deadline)
	defer cancel()
	r := &wasmRun{ctx: ctx, lim: lim, call: call}

	in, err := json.Marshal(wire.Program{JS: js, Names: names, MaxResultBytes: lim.MaxResultBytes,
		MaxStack: maxStack, MaxInputBytes: maxInputBytes})
	if err != nil {
		return Result{}, fmt.Errorf("codemode: %w", err)
	}
	limit := uint64(lim.MemoryBytes) + guestBaseBytes
	mem := &limitedMemory{limit: limit}
	stdout := &capped{limit: lim.MaxResultBytes + 64<<10}
	stderr := &capped{limit: maxGuestStderr}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: programs run side by side
		WithStdin(bytes.NewReader(in)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	// The guest's collector runs at Go's default pace (GOGC=100): its heap
	// may grow to twice what it holds live before a collection, so live data
	// past about half the cap is stopped. Measured: a GOMEMLIMIT at or below
	// the cap sends the collector into a spiral that runs into the deadline
	// rather than the cap, and GOGC=off stops a program that only churns
	// garbage (docs/code-mode.md, "Isolation").
	ictx := experimental.WithMemoryAllocator(context.WithValue(ctx, runKey{}, r), mem)
	mod, err := eng.rt.InstantiateModule(ictx, eng.compiled, cfg)
	if mod != nil {
		_ = mod.Close(context.WithoutCancel(ctx))
	}
	if observeMemory != nil {
		observeMemory(mem.peak)
	}
	res := Result{Value: nil, Log: r.log.lines, Calls: r.calls}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 && r.stop == nil {
		err = nil
	}
	switch {
	case r.stop != nil:
		return res, r.stop
	case mem.refused:
		return res, memoryError(lim)
	case ctx.Err() != nil && parent.Err() != nil:
		return res, &Error{CodeDeadline, "the program was stopped: its caller went away"}
	case ctx.Err() != nil:
		return res, &Error{CodeDeadline, fmt.Sprintf("the program ran past its deadline of %s", lim.Deadline)}
	case err != nil:
		if strings.Contains(stderr.String(), "out of memory") {
			return res, memoryError(lim)
		}
		return res, &Error{CodeProgram, fmt.Sprintf("the program's instance failed: %v %s", err, lastLine(stderr.String()))}
	case stdout.over:
		return res, &Error{CodeResultTooLarge, fmt.Sprintf("the returned value is over %s of JSON; the limit is %s", bytesText(lim.MaxResultBytes), bytesText(lim.MaxResultBytes))}
	}
	var out wire.Outcome
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return res, &Error{CodeProgram, "the program's instance gave no result: " + lastLine(stderr.String())}
	}
	if out.Error != nil {
		return res, &Error{out.Error.Code, out.Error.Message}
	}
	res.Value = out.Value
	if len(res.Value) == 0 {
		res.Value = json.RawMessage("null")
	}
	return res, nil
}

func memoryError(lim Limits) *Error {
	return &Error{CodeMemory, fmt.Sprintf("the program holds more than its memory limit of %s", bytesText(int(lim.MemoryBytes)))}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// errStopped ends the guest from inside an import; the run's state says why.
var errStopped = errors.New("codemode: the host stopped the program")

// hostCall implements codemode.call(req_ptr, req_len, resp_ptr, resp_cap)
// -> i32 (see internal/wire): one $ call, made synchronously; the guest
// waits in the import as long as the call takes (an approval included),
// within the program's deadline.
func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	r, _ := ctx.Value(runKey{}).(*wasmRun)
	if r == nil {
		panic(errStopped)
	}
	reqPtr, reqLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	respPtr, respCap := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	var out []byte
	if reqLen == 0 {
		out, r.pending = r.pending, nil
		if out == nil {
			out = callErrorJSON(&CallError{Code: "call_failed", Message: "no answer is waiting to be collected"})
		}
	} else {
		out = r.perform(mod, reqPtr, reqLen)
	}
	if uint64(len(out)) > uint64(respCap) {
		r.pending = out
		stack[0] = api.EncodeI32(-int32(len(out)))
		return
	}
	if !mod.Memory().Write(respPtr, out) {
		panic(fmt.Errorf("codemode.call: answer buffer at %d+%d is outside guest memory", respPtr, respCap))
	}
	stack[0] = api.EncodeI32(int32(len(out)))
}

func (r *wasmRun) perform(mod api.Module, reqPtr, reqLen uint32) []byte {
	if r.calls >= r.lim.MaxCalls {
		// Stop the program: a throw could be caught and looped on.
		r.stop = &Error{CodeCalls, fmt.Sprintf("the program made more than %d $ calls; the limit is %d a program", r.lim.MaxCalls, r.lim.MaxCalls)}
		panic(errStopped)
	}
	r.calls++
	if int(reqLen) > maxInputBytes+64<<10 {
		return callErrorJSON(&CallError{Code: "input_too_large", Field: "input", Status: 413,
			Message: fmt.Sprintf("input is over %s of JSON; the limit is %s a call", bytesText(maxInputBytes), bytesText(maxInputBytes))})
	}
	raw, ok := mod.Memory().Read(reqPtr, reqLen)
	if !ok {
		panic(fmt.Errorf("codemode.call: request at %d+%d is outside guest memory", reqPtr, reqLen))
	}
	var req wire.CallRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return callErrorJSON(&CallError{Code: "invalid_input", Field: "input", Status: 422, Message: "input is not JSON"})
	}
	out, err := r.call(r.ctx, req.Name, bytes.Clone(req.Input))
	if r.ctx.Err() != nil {
		// The deadline passed while the call ran: the program ends here.
		panic(errStopped)
	}
	if err != nil {
		ce := &CallError{Code: "call_failed", Message: err.Error()}
		var e *CallError
		if errors.As(err, &e) {
			ce = e
		}
		return callErrorJSON(ce)
	}
	if len(out) == 0 {
		out = nil
	}
	b, err := json.Marshal(wire.CallResponse{Value: out})
	if err != nil {
		return callErrorJSON(&CallError{Code: "call_failed", Message: "the answer is not JSON: " + err.Error()})
	}
	return b
}

func callErrorJSON(e *CallError) []byte {
	b, _ := json.Marshal(wire.CallResponse{Error: &wire.CallError{Code: e.Code, Message: e.Message, Field: e.Field,
		MissingPermission: e.MissingPermission, Status: e.Status}})
	return b
}

// hostLog implements codemode.log(ptr, len): one console line, kept within
// MaxLogBytes; past it one line says so and the rest is dropped unread.
func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	r, _ := ctx.Value(runKey{}).(*wasmRun)
	if r == nil || r.log.truncated {
		return
	}
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	if r.log.size+int(n) > r.lim.MaxLogBytes {
		r.log.truncated = true
		r.log.lines = append(r.log.lines, fmt.Sprintf("… log truncated: console output is limited to %s a program", bytesText(r.lim.MaxLogBytes)))
		return
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("codemode.log: line at %d+%d is outside guest memory", ptr, n))
	}
	r.log.size += int(n)
	r.log.lines = append(r.log.lines, string(b))
}

// capped keeps at most limit bytes and says when more came.
type capped struct {
	bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
