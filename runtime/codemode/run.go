package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dop251/goja"
	"github.com/evanw/esbuild/pkg/api"
)

// prefix wraps the program in an async function on its first line, so
// top-level await and return work and esbuild's line numbers stay the
// program's own (columns of line 1 are shifted by len(prefix), taken back).
const prefix = "(async () => {"

// maxStack bounds JavaScript call depth: deep recursion fails as a RangeError
// the program sees, long before it could exhaust the Go stack.
const maxStack = 2000

// Run strips source's types, runs it in a fresh instance with $ built from
// names, and returns its value and log. On failure the Result still holds the
// log and call count so far, and the error is an *Error.
func Run(ctx context.Context, source string, names []string, call Call, lim Limits) (Result, error) {
	lim = lim.withDefaults()
	if len(source) > lim.MaxProgramBytes {
		return Result{}, &Error{CodeProgramTooLong, fmt.Sprintf("program is %d bytes; the limit is %s", len(source), bytesText(lim.MaxProgramBytes))}
	}
	js, err := strip(source)
	if err != nil {
		return Result{}, err
	}
	// The whole run is bounded by its deadline plus the calls' wait; the
	// watcher holds the program's own time (outside $ calls) to Deadline.
	ctx, cancel := context.WithTimeout(ctx, lim.Deadline+lim.CallWait)
	defer cancel()

	r := &run{vm: goja.New(), lim: lim, call: call, ctx: ctx, clock: newClock()}
	r.vm.SetMaxCallStackSize(maxStack)
	if err := r.install(names); err != nil {
		return Result{}, fmt.Errorf("codemode: %w", err)
	}
	stop := r.watch(ctx)
	defer stop()

	v, err := r.vm.RunString(js)
	if err == nil {
		v, err = r.settle(v)
	}
	var value json.RawMessage
	if err == nil {
		value, err = r.export(v)
	}
	res := Result{Value: value, Log: r.log.lines, Calls: r.calls}
	if err != nil {
		return res, r.runError(err)
	}
	return res, nil
}

func (l Limits) withDefaults() Limits {
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	l.Deadline = min(l.Deadline, MaxDeadline)
	l.CallWait = min(max(l.CallWait, 0), MaxCallWait)
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.MaxCalls <= 0 {
		l.MaxCalls = DefaultMaxCalls
	}
	if l.MaxProgramBytes <= 0 {
		l.MaxProgramBytes = DefaultMaxProgramBytes
	}
	if l.MaxLogBytes <= 0 {
		l.MaxLogBytes = DefaultMaxLogBytes
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = DefaultMaxResultBytes
	}
	return l
}

// strip turns TypeScript into JavaScript goja runs (ES2017: async functions
// stay, later syntax is lowered).
func strip(source string) (string, error) {
	out := api.Transform(prefix+source+"\n})()", api.TransformOptions{
		Loader:     api.LoaderTS,
		Target:     api.ES2017,
		Sourcefile: "program.ts",
	})
	if len(out.Errors) > 0 {
		m := out.Errors[0]
		where := ""
		switch {
		case m.Location != nil && m.Location.Line > strings.Count(source, "\n")+1:
			where = "at the end of the program: "
		case m.Location != nil:
			col := m.Location.Column
			if m.Location.Line == 1 {
				col -= len(prefix)
			}
			where = fmt.Sprintf("line %d, column %d: ", m.Location.Line, col+1)
		}
		more := ""
		if n := len(out.Errors) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more)", n)
		}
		return "", &Error{CodeSyntax, where + m.Text + more}
	}
	return string(out.Code), nil
}

type run struct {
	vm    *goja.Runtime
	lim   Limits
	call  Call
	ctx   context.Context
	clock *clock
	calls int
	log   logBuf
}

// settle waits out the wrapper's promise: every $ call resolves before it
// returns, so a promise still pending awaits something that never settles.
func (r *run) settle(v goja.Value) (goja.Value, error) {
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return v, nil
	}
	switch p.State() {
	case goja.PromiseStateRejected:
		return nil, &Error{CodeProgram, "uncaught " + r.describe(p.Result())}
	case goja.PromiseStatePending:
		return nil, &Error{CodeProgram, "the program awaited a promise that never settles (only $ calls and promises they feed can settle)"}
	}
	return p.Result(), nil
}

// describe names a thrown value: an Error's name, message and (for a $
// call's error) code and missing permission.
func (r *run) describe(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return "throw " + v.String()
	}
	s := v.String()
	if c := o.Get("code"); c != nil && !goja.IsUndefined(c) {
		s += " (code " + c.String()
		if mp := o.Get("missing_permission"); mp != nil && !goja.IsUndefined(mp) && mp.String() != "" {
			s += ", missing permission " + mp.String()
		}
		s += ")"
	}
	return s
}

// export writes the program's value as JSON within MaxResultBytes.
func (r *run) export(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("null"), nil
	}
	stringify, _ := goja.AssertFunction(r.vm.Get("JSON").ToObject(r.vm).Get("stringify"))
	s, err := stringify(goja.Undefined(), v)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			return nil, &Error{CodeProgram, "the returned value cannot be written as JSON: " + ex.Value().String()}
		}
		return nil, err
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	out := s.String()
	if len(out) > r.lim.MaxResultBytes {
		return nil, &Error{CodeResultTooLarge, fmt.Sprintf("the returned value is %d bytes of JSON; the limit is %s", len(out), bytesText(r.lim.MaxResultBytes))}
	}
	return json.RawMessage(out), nil
}

// runError turns what stopped the VM into an *Error.
func (r *run) runError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var in *goja.InterruptedError
	if errors.As(err, &in) {
		if e, ok := in.Value().(*Error); ok {
			return e
		}
		return &Error{CodeProgram, fmt.Sprint(in.Value())}
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return &Error{CodeProgram, "uncaught " + r.describe(ex.Value())}
	}
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) {
		return &Error{CodeSyntax, se.Error()}
	}
	if strings.Contains(err.Error(), "stack overflow") {
		return &Error{CodeProgram, err.Error()}
	}
	return &Error{CodeProgram, err.Error()}
}

// bytesText writes a byte limit as "65536 bytes (64 KiB)".
func bytesText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
