// Package guest is the Go side of the Subako function ABI, for packages built
// with GOOS=wasip1 GOARCH=wasm. Main reads the call from stdin, runs one tool and
// writes its result to stdout; Fetch reaches the network through the host's
// subako.http_fetch import.
//
// It must never hold or ask for a credential: the host attaches them after the
// request has left the guest, and drops any the guest sets itself.
package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ToolFunc runs one tool on its raw JSON input and returns a value that is
// encoded as the call's JSON output.
type ToolFunc func(input json.RawMessage) (any, error)

// Tools maps a tool's name, as written in manifest.json, to its function.
type Tools map[string]ToolFunc

// Exit codes a package returns. The host treats any non-zero code as a failed
// call and shows stderr; 2 is also what the Go runtime uses for a panic.
const (
	ExitOK     = 0
	ExitFailed = 1
)

// call is what the host writes to stdin.
type call struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
}

// Main runs the tool named on stdin and exits. On error it writes the message to
// stderr and exits with ExitFailed, so the host can show it to the caller.
func Main(tools Tools) {
	out, err := Run(tools, os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err.Error())
		os.Exit(ExitFailed)
	}
	os.Stdout.Write(out)
	os.Exit(ExitOK)
}

// Run decodes one call from r, runs it and returns the encoded output. It is
// Main without the process around it, so a package's tools can be tested natively.
func Run(tools Tools, r io.Reader) ([]byte, error) {
	var c call
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return nil, fmt.Errorf("read call from stdin: %w", err)
	}
	f, ok := tools[c.Tool]
	if !ok {
		return nil, fmt.Errorf("unknown tool %q", c.Tool)
	}
	if len(c.Input) == 0 {
		c.Input = json.RawMessage("{}")
	}
	v, err := f(c.Input)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	return out, nil
}

// Typed adapts a function over a decoded input struct into a ToolFunc. Unknown
// input fields are refused so a typo in an argument is not silently ignored.
func Typed[In any](f func(In) (any, error)) ToolFunc {
	return func(raw json.RawMessage) (any, error) {
		var in In
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		return f(in)
	}
}

// ErrNoHost is returned by Fetch when the program runs outside the Subako host.
var ErrNoHost = errors.New("http_fetch is only available inside a Subako function (GOOS=wasip1)")
