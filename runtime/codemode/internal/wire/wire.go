// Package wire is what code mode's host (runtime/codemode) and its
// WebAssembly guest (runtime/codemode/guest) say to each other:
//
//   - stdin: one Program, the stripped JavaScript and the names of $;
//   - the import codemode.call(req_ptr, req_len, resp_ptr, resp_cap) -> i32:
//     a CallRequest in, a CallResponse out. The answer is written at resp_ptr
//     and its length returned; when it is longer than resp_cap nothing is
//     written, the host keeps it and returns minus its length, and the guest
//     collects it with req_len = 0 and a buffer that large (the call is never
//     made twice);
//   - the import codemode.log(ptr, len): one console line, already formatted;
//   - stdout: one Outcome, the program's value or why it did not finish.
package wire

import "encoding/json"

// Module and import names of the host functions.
const (
	Module     = "codemode"
	CallImport = "call"
	LogImport  = "log"
)

// Program is the guest's stdin.
type Program struct {
	JS             string   `json:"js"`
	Names          []string `json:"names"`
	MaxResultBytes int      `json:"max_result_bytes"`
	MaxStack       int      `json:"max_stack"`
	MaxInputBytes  int      `json:"max_input_bytes"`
}

// CallRequest is one $ call.
type CallRequest struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// CallResponse is its answer: Value, or Error.
type CallResponse struct {
	Value json.RawMessage `json:"value,omitempty"`
	Error *CallError      `json:"error,omitempty"`
}

// CallError is a refused or failed call, as the program catches it.
type CallError struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	Field             string `json:"field,omitempty"`
	MissingPermission string `json:"missing_permission,omitempty"`
	Status            int    `json:"status,omitempty"`
}

// Outcome is the guest's stdout: Value (JSON, "null" when none), or Error.
type Outcome struct {
	Value json.RawMessage `json:"value,omitempty"`
	Error *RunError       `json:"error,omitempty"`
}

// RunError is why the program did not finish, with a codemode Error code.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RunError) Error() string { return e.Code + ": " + e.Message }
