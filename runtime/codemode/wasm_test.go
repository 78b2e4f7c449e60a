package codemode_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subako/subako/runtime/codemode"
)

// Each program is its own WebAssembly instance with its own memory bound:
// one running past its limit stops alone, the other, at the same time,
// finishes with its calls and value.
func TestWasmTwoProgramsAtOnceOneOverItsMemory(t *testing.T) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var bombErr, okErr error
	var ok codemode.Result
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, bombErr = codemode.RunWasm(ctx, "const a: string[] = []; while (true) a.push('x'.repeat(4096) + a.length)", names, approvals,
			codemode.Limits{MemoryBytes: 16 << 20, Deadline: 60 * time.Second})
	}()
	go func() {
		defer wg.Done()
		ok, okErr = codemode.RunWasm(ctx, `
const kept: string[] = []
for (let i = 0; i < 2000; i++) kept.push("y".repeat(1000) + i)   // 2 MB of its own
const list = await $.Approval.list({})
const r = await $.Approval.approve({ approval: list.items[0].id })
return { kept: kept.length, approved: r.approval }`, names, approvals, codemode.Limits{MemoryBytes: 32 << 20, Deadline: 60 * time.Second})
	}()
	wg.Wait()
	var e *codemode.Error
	if !errorsAs(bombErr, &e) || e.Code != codemode.CodeMemory {
		t.Fatalf("the bomb: want memory_exceeded, got %v", bombErr)
	}
	if okErr != nil || string(ok.Value) != `{"kept":2000,"approved":"ap_1"}` || ok.Calls != 2 {
		t.Fatalf("the other program: %s calls %d err %v", ok.Value, ok.Calls, okErr)
	}
}

// An allocation bomb, also one built-in call asking for a gigabyte at once,
// is stopped with memory_exceeded, and the server's own memory grows by at
// most the program's bound (plus the guest's base), not by what it asked.
func TestWasmAllocationBombLeavesServerMemoryBounded(t *testing.T) {
	ctx := context.Background()
	var peak uint64
	codemode.ObserveMemory(func(b uint64) { peak = max(peak, b) })
	defer codemode.ObserveMemory(nil)
	// Warm: the guest compiled, its first instance made, before measuring.
	if _, err := codemode.RunWasm(ctx, "return 1", nil, approvals, codemode.Limits{}); err != nil {
		t.Fatal(err)
	}
	const limit = 32 << 20
	for _, src := range []string{
		"return 'x'.repeat(1 << 30).length",
		"const a: number[][] = []; while (true) a.push(new Array(100000).fill(a.length))",
	} {
		resetPeakRSS(t)
		before := rss(t, "VmRSS")
		start := time.Now()
		_, err := codemode.RunWasm(ctx, src, nil, approvals, codemode.Limits{MemoryBytes: limit, Deadline: 60 * time.Second})
		var e *codemode.Error
		if !errorsAs(err, &e) || e.Code != codemode.CodeMemory || !strings.Contains(e.Message, "33554432 bytes (32 MiB)") {
			t.Fatalf("%s: want memory_exceeded naming 32 MiB, got %v", src, err)
		}
		grown := rss(t, "VmHWM") - before
		t.Logf("%s: stopped in %s; the instance's memory peaked at %d MiB; the process's peak RSS grew %d MiB",
			src, time.Since(start).Round(time.Millisecond), peak>>20, grown>>20)
		if peak > limit+32<<20 {
			t.Fatalf("instance memory peaked at %d MiB, over the 32 MiB bound and the guest's base", peak>>20)
		}
		if grown > limit+96<<20 {
			t.Fatalf("the process's peak RSS grew %d MiB for a program bounded at 32 MiB", grown>>20)
		}
	}
}

// A program's only ways out are $ and console: no module loader, process,
// network, timers, file system, environment or host objects.
func TestWasmProgramReachesNothingButDollar(t *testing.T) {
	src := `
const probes: Record<string, string> = {}
for (const n of ["require", "process", "Deno", "Bun", "fetch", "XMLHttpRequest", "WebSocket", "setTimeout",
  "setInterval", "queueMicrotask", "WebAssembly", "module", "exports", "global", "os", "fs", "Java", "Packages", "load", "print"]) {
  probes[n] = typeof (globalThis as any)[n]
}
let viaFunction = ""
try { viaFunction = typeof new Function("return typeof require + typeof process")() } catch (e) { viaFunction = "threw" }
let env = ""
try { env = String((globalThis as any).process?.env?.HOME) } catch (e) { env = "threw" }
return { probes, own: Object.getOwnPropertyNames(globalThis).sort(), viaFunction, env, dollar: Object.keys($).sort() }`
	res, err := codemode.RunWasm(context.Background(), src, names, approvals, codemode.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Probes  map[string]string
		Own     []string
		ViaFunc string `json:"viaFunction"`
		Env     string
		Dollar  []string
	}
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatal(err)
	}
	for n, typ := range got.Probes {
		if typ != "undefined" {
			t.Errorf("%s is reachable (%s)", n, typ)
		}
	}
	if got.ViaFunc != "string" || got.Env != "undefined" {
		t.Errorf("new Function: %q, env: %q", got.ViaFunc, got.Env)
	}
	// Every global is an ECMAScript built-in, or $ and console.
	// GoError is goja's Error subclass for errors its built-ins raise: a
	// constructor like TypeError, holding no Go value.
	builtins := map[string]bool{"$": true, "console": true, "globalThis": true, "GoError": true}
	for _, n := range strings.Fields(`Object Function Array String Number Boolean Symbol BigInt Math JSON Date RegExp Error
		EvalError RangeError ReferenceError SyntaxError TypeError URIError AggregateError Promise Proxy Reflect Map Set WeakMap
		WeakSet WeakRef FinalizationRegistry ArrayBuffer SharedArrayBuffer DataView Int8Array Uint8Array Uint8ClampedArray Int16Array
		Uint16Array Int32Array Uint32Array Float32Array Float64Array BigInt64Array BigUint64Array Atomics Iterator NaN Infinity undefined
		eval isFinite isNaN parseFloat parseInt decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape`) {
		builtins[n] = true
	}
	for _, n := range got.Own {
		if !builtins[n] {
			t.Errorf("global %q is not an ECMAScript built-in", n)
		}
	}
	if strings.Join(got.Dollar, ",") != "Agent,Approval,sandbox" {
		t.Errorf("$ holds %v", got.Dollar)
	}
}

func errorsAs(err error, e **codemode.Error) bool {
	ce, ok := err.(*codemode.Error)
	if ok {
		*e = ce
	}
	return ok
}

// resetPeakRSS resets the process's VmHWM (Linux: 5 to clear_refs).
func resetPeakRSS(t *testing.T) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// rss reads a /proc/self/status field in bytes.
func rss(t *testing.T, field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// The runner's answers match Run's: value and log, a thrown call error,
// the deadline in a loop that calls nothing, the call count.
func TestWasmRunnerAnswersAsRunDoes(t *testing.T) {
	ctx := context.Background()
	res, err := codemode.RunWasm(ctx, `const l = await $.Approval.list({}); console.log("found", l.items.length)
try { await $.Agent.create({}) } catch (e: any) { return [e.code, e.missing_permission, e instanceof Error] }`, names, approvals, codemode.Limits{})
	if err != nil || string(res.Value) != `["permission_denied","Agent.create",true]` || strings.Join(res.Log, "|") != "found 2" || res.Calls != 2 {
		t.Fatalf("%s %q %d %v", res.Value, res.Log, res.Calls, err)
	}
	for _, c := range []struct {
		src, code, says string
		lim             codemode.Limits
	}{
		{"while (true) {}", codemode.CodeDeadline, "deadline of 300ms", codemode.Limits{Deadline: 300 * time.Millisecond}},
		{"while (true) { try { await $.Approval.list() } catch (e) {} }", codemode.CodeCalls, "limit is 5", codemode.Limits{MaxCalls: 5}},
		{"return 'x'.repeat(2000)", codemode.CodeResultTooLarge, "limit is 1024 bytes (1 KiB)", codemode.Limits{MaxResultBytes: 1024}},
		{"await new Promise(() => {})", codemode.CodeProgram, "never settles", codemode.Limits{}},
	} {
		res, err := codemode.RunWasm(ctx, c.src, names, approvals, c.lim)
		e := runErr(t, res, err, c.code)
		if !strings.Contains(e.Message, c.says) {
			t.Fatalf("%s: %q does not say %q", c.src, e.Message, c.says)
		}
	}
}

// BenchmarkRunners: an empty program and a program of 100 $ calls, in
// process (Run) and in a WebAssembly instance (RunWasm), in the same loop.
func BenchmarkRunners(b *testing.B) {
	ctx := context.Background()
	hundred := "for (let i = 0; i < 100; i++) await $.Approval.list({}); return 1"
	if _, err := codemode.RunWasm(ctx, "return 1", names, approvals, codemode.Limits{}); err != nil {
		b.Fatal(err)
	}
	var inEmpty, inCalls, wEmpty, wCalls time.Duration
	timed := func(d *time.Duration, run func(context.Context, string, []string, codemode.Call, codemode.Limits) (codemode.Result, error), src string) {
		t := time.Now()
		if _, err := run(ctx, src, names, approvals, codemode.Limits{}); err != nil {
			b.Fatal(err)
		}
		*d += time.Since(t)
	}
	for b.Loop() {
		timed(&inEmpty, codemode.Run, "return 1")
		timed(&inCalls, codemode.Run, hundred)
		timed(&wEmpty, codemode.RunWasm, "return 1")
		timed(&wCalls, codemode.RunWasm, hundred)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inEmpty)/n, "ns/empty-inprocess")
	b.ReportMetric(float64(wEmpty)/n, "ns/empty-wasm")
	b.ReportMetric(float64(inCalls-inEmpty)/n/100, "ns/call-inprocess")
	b.ReportMetric(float64(wCalls-wEmpty)/n/100, "ns/call-wasm")
}
