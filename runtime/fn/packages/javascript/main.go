// Command javascript is the Subako function package "javascript": it runs a
// script in github.com/dop251/goja (ECMAScript 5.1 plus most of ES6) and returns
// the value of its last expression and what it logged. Scripts get no network, no
// files and no host objects beyond console.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/subako/subako/runtime/fn/guest"
)

// Console output beyond these bounds is dropped and flagged, so a chatty loop
// cannot push the result past the host's output cap.
const (
	maxLogLines = 1000
	maxLogBytes = 256 << 10
)

type runInput struct {
	Code string `json:"code"`
}

type runOutput struct {
	Result    any      `json:"result"`
	Logs      []string `json:"logs"`
	Truncated bool     `json:"logs_truncated,omitempty"`
}

func run(in runInput) (any, error) {
	if strings.TrimSpace(in.Code) == "" {
		return nil, errors.New("code: must not be empty")
	}
	vm := goja.New()
	out := &runOutput{Logs: []string{}}
	if err := installConsole(vm, out); err != nil {
		return nil, err
	}
	v, err := vm.RunString(in.Code)
	if err != nil {
		return nil, withLogs(scriptError(err), out)
	}
	if p, ok := v.Export().(*goja.Promise); ok {
		switch p.State() {
		case goja.PromiseStateRejected:
			return nil, withLogs(fmt.Errorf("script: promise rejected: %s", p.Result().String()), out)
		case goja.PromiseStatePending:
			return nil, withLogs(errors.New("script: promise still pending when the script ended"), out)
		}
		v = p.Result()
	}
	out.Result = exportJSON(vm, v)
	return out, nil
}

// maxErrorLogBytes is how much of the console a failed script's error
// carries: its last lines, which led up to the failure, within the host's
// stderr cap.
const maxErrorLogBytes = 8 << 10

// withLogs adds what the script logged before it failed to err, the last
// lines first kept, so debugging a failure does not need a second run.
func withLogs(err error, out *runOutput) error {
	if len(out.Logs) == 0 {
		return err
	}
	lines, size := out.Logs, 0
	start := len(lines)
	for start > 0 && size+len(lines[start-1])+1 <= maxErrorLogBytes {
		start--
		size += len(lines[start]) + 1
	}
	if start == len(lines) {
		// The last line alone is over the budget: its end, which led to the error.
		last := lines[len(lines)-1]
		cut := len(last) - maxErrorLogBytes
		for cut < len(last) && !utf8.RuneStart(last[cut]) {
			cut++
		}
		lines, start = []string{"…" + last[cut:]}, 0
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(err.Error(), "\n"))
	b.WriteString("\n\nconsole output before the error")
	if start > 0 || out.Truncated {
		b.WriteString(" (its last lines)")
	}
	b.WriteString(":")
	for _, l := range lines[start:] {
		b.WriteString("\n")
		b.WriteString(l)
	}
	return errors.New(b.String())
}

func scriptError(err error) error {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return fmt.Errorf("script: %s", ex.String())
	}
	return fmt.Errorf("script: %w", err)
}

func installConsole(vm *goja.Runtime, out *runOutput) error {
	size := 0
	logf := func(level string) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			parts := make([]string, len(call.Arguments))
			for i, a := range call.Arguments {
				parts[i] = format(vm, a)
			}
			line := strings.Join(parts, " ")
			if level != "log" {
				line = level + ": " + line
			}
			if len(out.Logs) >= maxLogLines || size+len(line) > maxLogBytes {
				out.Truncated = true
				return goja.Undefined()
			}
			size += len(line)
			out.Logs = append(out.Logs, line)
			return goja.Undefined()
		}
	}
	console := vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(level, logf(level)); err != nil {
			return fmt.Errorf("console: %w", err)
		}
	}
	return vm.Set("console", console)
}

// format prints strings bare and everything else as JSON, like a browser console.
func format(vm *goja.Runtime, v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	b, err := json.Marshal(exportJSON(vm, v))
	if err != nil {
		return v.String()
	}
	return string(b)
}

// exportJSON turns a script value into JSON the way JSON.stringify does (Dates
// as ISO strings, functions left out); values it cannot write, such as a bare
// function or a cyclic object, become their string form.
func exportJSON(vm *goja.Runtime, v goja.Value) any {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return nil
	}
	stringify, ok := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	if !ok {
		return v.String()
	}
	s, err := stringify(goja.Undefined(), v)
	if err != nil || goja.IsUndefined(s) {
		return v.String()
	}
	return json.RawMessage(s.String())
}

func main() {
	guest.Main(guest.Tools{"run": guest.Typed(run)})
}
