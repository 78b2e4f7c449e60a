package codemode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dop251/goja"
)

// maxInputBytes bounds one $ call's input as JSON.
const maxInputBytes = 1 << 20

// install gives the fresh VM its only two ways out: $ and console.
func (r *run) install(names []string) error {
	root := r.vm.NewObject()
	for _, name := range names {
		parts := strings.Split(name, ".")
		obj := root
		for _, p := range parts[:len(parts)-1] {
			next, ok := obj.Get(p).(*goja.Object)
			if !ok {
				next = r.vm.NewObject()
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
	if err := r.vm.Set("$", root); err != nil {
		return err
	}
	console := r.vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(level, r.logf(level)); err != nil {
			return err
		}
	}
	return r.vm.Set("console", console)
}

// method is one $ leaf: it calls synchronously (the program waits) and
// answers with a settled promise, so `await $.Noun.verb(...)` reads as it
// would against the API.
func (r *run) method(name string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		p, resolve, reject := r.vm.NewPromise()
		if r.calls >= r.lim.MaxCalls {
			// Stop the program: a throw could be caught and looped on.
			r.vm.Interrupt(&Error{CodeCalls, fmt.Sprintf("the program made more than %d $ calls; the limit is %d a program", r.lim.MaxCalls, r.lim.MaxCalls)})
			return r.vm.ToValue(p)
		}
		r.calls++
		input, cerr := r.input(fc.Argument(0))
		var out Answer
		var err error
		if cerr == nil {
			r.clock.enter()
			out, err = r.call(r.ctx, name, input)
			r.clock.leave()
		}
		if cerr != nil {
			err = cerr
		}
		if r.ctx.Err() != nil {
			// The run's time ended while the call ran: stop here, before
			// the program awaits a promise nothing will settle.
			r.vm.Interrupt(r.stopped(r.ctx))
			return r.vm.ToValue(p)
		}
		if err != nil {
			_ = reject(r.callError(name, err))
			return r.vm.ToValue(p)
		}
		v, perr := r.parse(out)
		if perr != nil {
			_ = reject(r.callError(name, perr))
			return r.vm.ToValue(p)
		}
		_ = resolve(v)
		return r.vm.ToValue(p)
	}
}

// input writes a call's argument as JSON (undefined: {}).
func (r *run) input(v goja.Value) (json.RawMessage, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("{}"), nil
	}
	stringify, _ := goja.AssertFunction(r.vm.Get("JSON").ToObject(r.vm).Get("stringify"))
	s, err := stringify(goja.Undefined(), v)
	if err != nil || goja.IsUndefined(s) {
		return nil, &CallError{Code: "invalid_input", Message: "input cannot be written as JSON", Field: "input", Status: 422}
	}
	if len(s.String()) > maxInputBytes {
		return nil, &CallError{Code: "input_too_large", Field: "input", Status: 413,
			Message: fmt.Sprintf("input is %d bytes of JSON; the limit is %s a call", len(s.String()), bytesText(maxInputBytes))}
	}
	return json.RawMessage(s.String()), nil
}

func (r *run) parse(out Answer) (goja.Value, error) {
	if out.Bytes {
		return r.vm.New(r.vm.Get("Uint8Array"), r.vm.ToValue(r.vm.NewArrayBuffer(out.Body)))
	}
	if len(out.Body) == 0 {
		return goja.Undefined(), nil
	}
	parse, _ := goja.AssertFunction(r.vm.Get("JSON").ToObject(r.vm).Get("parse"))
	return parse(goja.Undefined(), r.vm.ToValue(string(out.Body)))
}

// callError is the Error the program catches: message, code, field, status
// and missing_permission, as the API's problem JSON names them.
func (r *run) callError(name string, err error) goja.Value {
	ce := &CallError{Code: "call_failed", Message: err.Error()}
	var e *CallError
	if errors.As(err, &e) {
		ce = e
	}
	o := r.vm.NewGoError(fmt.Errorf("%s: %s", name, ce.Message))
	_ = o.Set("name", "CallError")
	_ = o.Set("verb", name)
	_ = o.Set("code", ce.Code)
	_ = o.Set("status", ce.Status)
	_ = o.Set("field", ce.Field)
	_ = o.Set("missing_permission", ce.MissingPermission)
	_ = o.Delete("value") // NewGoError's Go value: not the program's business
	return o
}

// logBuf keeps console output within MaxLogBytes; past it one line says so.
type logBuf struct {
	lines     []string
	size      int
	truncated bool
}

func (r *run) logf(level string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		if r.log.truncated {
			return goja.Undefined()
		}
		parts := make([]string, len(fc.Arguments))
		for i, a := range fc.Arguments {
			parts[i] = r.format(a)
		}
		line := strings.Join(parts, " ")
		if level != "log" {
			line = level + ": " + line
		}
		if r.log.size+len(line) > r.lim.MaxLogBytes {
			r.log.truncated = true
			r.log.lines = append(r.log.lines, fmt.Sprintf("… log truncated: console output is limited to %s a program", bytesText(r.lim.MaxLogBytes)))
			return goja.Undefined()
		}
		r.log.size += len(line)
		r.log.lines = append(r.log.lines, line)
		return goja.Undefined()
	}
}

// format prints strings bare and everything else as JSON, as a console does.
func (r *run) format(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if o, ok := v.(*goja.Object); ok {
		if o.ClassName() == "Error" {
			return r.describe(v)
		}
	}
	stringify, _ := goja.AssertFunction(r.vm.Get("JSON").ToObject(r.vm).Get("stringify"))
	s, err := stringify(goja.Undefined(), v)
	if err != nil || s == nil || goja.IsUndefined(s) {
		return v.String()
	}
	return s.String()
}
