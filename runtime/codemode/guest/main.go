// Command guest is code mode's JavaScript instance: built for GOOS=wasip1,
// run by runtime/codemode in a fresh WebAssembly instance per program. It
// reads one wire.Program from stdin, runs its (already stripped) JavaScript
// in github.com/dop251/goja with only `$` and `console`, and writes one
// wire.Outcome to stdout. Every `$` call goes to the host through the
// codemode.call import and console lines through codemode.log; the host
// holds the limits (deadline, memory, call count, log size) and this module
// has no files, network, environment or other host objects to reach.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dop251/goja"

	"github.com/subako/subako/runtime/codemode/internal/wire"
)

func main() {
	out := run()
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(wire.Outcome{Error: &wire.RunError{Code: "program_error", Message: err.Error()}})
	}
	_, _ = os.Stdout.Write(b)
}

func run() wire.Outcome {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail("program_error", "read the program: "+err.Error())
	}
	var p wire.Program
	if err := json.Unmarshal(raw, &p); err != nil {
		return fail("program_error", "read the program: "+err.Error())
	}
	r := &vm{rt: goja.New(), p: p}
	if p.MaxStack > 0 {
		r.rt.SetMaxCallStackSize(p.MaxStack)
	}
	if err := r.install(p.Names); err != nil {
		return fail("program_error", err.Error())
	}
	v, err := r.rt.RunString(p.JS)
	if err == nil {
		v, err = r.settle(v)
	}
	var value json.RawMessage
	if err == nil {
		value, err = r.export(v)
	}
	if err != nil {
		e := r.runError(err)
		return wire.Outcome{Error: e}
	}
	return wire.Outcome{Value: value}
}

func fail(code, msg string) wire.Outcome {
	return wire.Outcome{Error: &wire.RunError{Code: code, Message: msg}}
}

type vm struct {
	rt *goja.Runtime
	p  wire.Program
}

// settle waits out the wrapper's promise: every $ call resolves before it
// returns, so a promise still pending awaits something that never settles.
func (r *vm) settle(v goja.Value) (goja.Value, error) {
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		return v, nil
	}
	switch p.State() {
	case goja.PromiseStateRejected:
		return nil, &wire.RunError{Code: "program_error", Message: "uncaught " + r.describe(p.Result())}
	case goja.PromiseStatePending:
		return nil, &wire.RunError{Code: "program_error", Message: "the program awaited a promise that never settles (only $ calls and promises they feed can settle)"}
	}
	return p.Result(), nil
}

// describe names a thrown value: an Error's name, message and (for a $
// call's error) code and missing permission.
func (r *vm) describe(v goja.Value) string {
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

func (r *vm) stringify(v goja.Value) (goja.Value, error) {
	stringify, _ := goja.AssertFunction(r.rt.Get("JSON").ToObject(r.rt).Get("stringify"))
	return stringify(goja.Undefined(), v)
}

// export writes the program's value as JSON within MaxResultBytes.
func (r *vm) export(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("null"), nil
	}
	s, err := r.stringify(v)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			return nil, &wire.RunError{Code: "program_error", Message: "the returned value cannot be written as JSON: " + ex.Value().String()}
		}
		return nil, err
	}
	if goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	out := s.String()
	if len(out) > r.p.MaxResultBytes {
		return nil, &wire.RunError{Code: "result_too_large", Message: fmt.Sprintf("the returned value is %d bytes of JSON; the limit is %s", len(out), bytesText(r.p.MaxResultBytes))}
	}
	return json.RawMessage(out), nil
}

// runError turns what stopped the VM into a RunError.
func (r *vm) runError(err error) *wire.RunError {
	var e *wire.RunError
	if errors.As(err, &e) {
		return e
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return &wire.RunError{Code: "program_error", Message: "uncaught " + r.describe(ex.Value())}
	}
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) {
		return &wire.RunError{Code: "syntax_error", Message: se.Error()}
	}
	return &wire.RunError{Code: "program_error", Message: err.Error()}
}

// install gives the fresh VM its only two ways out: $ and console.
func (r *vm) install(names []string) error {
	root := r.rt.NewObject()
	for _, name := range names {
		parts := strings.Split(name, ".")
		obj := root
		for _, p := range parts[:len(parts)-1] {
			next, ok := obj.Get(p).(*goja.Object)
			if !ok {
				next = r.rt.NewObject()
				if err := obj.Set(p, next); err != nil {
					return err
				}
			}
			obj = next
		}
		if err := obj.Set(parts[len(parts)-1], r.method(name)); err != nil {
			return err
		}
	}
	if err := r.rt.Set("$", root); err != nil {
		return err
	}
	console := r.rt.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(level, r.logf(level)); err != nil {
			return err
		}
	}
	return r.rt.Set("console", console)
}

// method is one $ leaf: it calls the host synchronously (the program waits)
// and answers with a settled promise, so `await $.Noun.verb(...)` reads as
// it would against the API. The host counts calls and stops the instance
// past the limit.
func (r *vm) method(name string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		p, resolve, reject := r.rt.NewPromise()
		input, cerr := r.input(fc.Argument(0))
		if cerr != nil {
			_ = reject(r.callError(name, cerr))
			return r.rt.ToValue(p)
		}
		req, _ := json.Marshal(wire.CallRequest{Name: name, Input: input})
		raw, err := hostCall(req)
		var resp wire.CallResponse
		if err == nil {
			err = json.Unmarshal(raw, &resp)
		}
		if err != nil {
			_ = reject(r.callError(name, &wire.CallError{Code: "call_failed", Message: err.Error()}))
			return r.rt.ToValue(p)
		}
		if resp.Error != nil {
			_ = reject(r.callError(name, resp.Error))
			return r.rt.ToValue(p)
		}
		v, perr := r.parse(resp.Value)
		if perr != nil {
			_ = reject(r.callError(name, &wire.CallError{Code: "call_failed", Message: perr.Error()}))
			return r.rt.ToValue(p)
		}
		_ = resolve(v)
		return r.rt.ToValue(p)
	}
}

// input writes a call's argument as JSON (undefined: {}).
func (r *vm) input(v goja.Value) (json.RawMessage, *wire.CallError) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("{}"), nil
	}
	s, err := r.stringify(v)
	if err != nil || goja.IsUndefined(s) {
		return nil, &wire.CallError{Code: "invalid_input", Message: "input cannot be written as JSON", Field: "input", Status: 422}
	}
	if len(s.String()) > r.p.MaxInputBytes {
		return nil, &wire.CallError{Code: "input_too_large", Field: "input", Status: 413,
			Message: fmt.Sprintf("input is %d bytes of JSON; the limit is %s a call", len(s.String()), bytesText(r.p.MaxInputBytes))}
	}
	return json.RawMessage(s.String()), nil
}

func (r *vm) parse(out json.RawMessage) (goja.Value, error) {
	if len(out) == 0 {
		return goja.Undefined(), nil
	}
	parse, _ := goja.AssertFunction(r.rt.Get("JSON").ToObject(r.rt).Get("parse"))
	return parse(goja.Undefined(), r.rt.ToValue(string(out)))
}

// callError is the Error the program catches: message, code, field, status
// and missing_permission, as the API's problem JSON names them.
func (r *vm) callError(name string, ce *wire.CallError) goja.Value {
	o := r.rt.NewGoError(fmt.Errorf("%s: %s", name, ce.Message))
	_ = o.Set("name", "CallError")
	_ = o.Set("verb", name)
	_ = o.Set("code", ce.Code)
	_ = o.Set("status", ce.Status)
	_ = o.Set("field", ce.Field)
	_ = o.Set("missing_permission", ce.MissingPermission)
	_ = o.Delete("value") // NewGoError's Go value: not the program's business
	return o
}

// logf hands each console line to the host, which keeps the log bounded.
func (r *vm) logf(level string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		parts := make([]string, len(fc.Arguments))
		for i, a := range fc.Arguments {
			parts[i] = r.format(a)
		}
		line := strings.Join(parts, " ")
		if level != "log" {
			line = level + ": " + line
		}
		hostLog(line)
		return goja.Undefined()
	}
}

// format prints strings bare and everything else as JSON, as a console does.
func (r *vm) format(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if o, ok := v.(*goja.Object); ok {
		if o.ClassName() == "Error" {
			return r.describe(v)
		}
	}
	s, err := r.stringify(v)
	if err != nil || s == nil || goja.IsUndefined(s) {
		return v.String()
	}
	return s.String()
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
