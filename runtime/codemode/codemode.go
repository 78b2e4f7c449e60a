// Package codemode runs a short TypeScript program against `$`, the typed
// client of Subako's verbs (people's /mcp `do`) or of a session's tools
// (a session's code mode). Types are stripped in-process with esbuild; the
// program runs in a fresh JavaScript instance per Run whose only ways out are
// `$` calls (each handed to the caller's Call, which checks and records it)
// and console.log (captured, bounded).
//
// It must never give a program any other host access: no files, network,
// timers, environment or Go objects.
package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Limits bound one program. Zero fields take their defaults.
type Limits struct {
	Deadline        time.Duration // default 10 s, at most 60 s
	MemoryBytes     int64         // default 64 MiB
	MaxCalls        int           // default 100 $ calls a program
	MaxProgramBytes int           // default 64 KiB
	MaxLogBytes     int           // default 64 KiB
	MaxResultBytes  int           // default 1 MiB
	// CallWait is how long the program's $ calls may wait in all (an
	// ask-first call waiting for a person) without it counting against
	// Deadline: the program's clock stops inside a call. Default 0 (a call's
	// time counts), at most 10 minutes.
	CallWait time.Duration
}

// Defaults and ceilings of Limits.
const (
	DefaultDeadline        = 10 * time.Second
	MaxDeadline            = 60 * time.Second
	DefaultMemoryBytes     = 64 << 20
	DefaultMaxCalls        = 100
	DefaultMaxProgramBytes = 64 << 10
	DefaultMaxLogBytes     = 64 << 10
	DefaultMaxResultBytes  = 1 << 20
	MaxCallWait            = 10 * time.Minute
)

// Call performs one $ call; name is the dotted path ("Session.end",
// "sandbox.workbench.exec"). A returned *CallError is thrown in the program
// as an Error with .code, .message, .field, .status and .missing_permission;
// any other error is thrown with code "call_failed".
type Call func(ctx context.Context, name string, input json.RawMessage) (Answer, error)

// Answer is what a $ call answered: JSON (nothing: undefined), or with
// Bytes a download's bytes, which the program gets as a Uint8Array.
type Answer struct {
	Body  []byte
	Bytes bool
}

// JSON is an answer of JSON.
func JSON(b json.RawMessage) Answer { return Answer{Body: b} }

// CallError is a refused or failed $ call, as the program sees it.
type CallError struct {
	Code, Message, Field, MissingPermission string
	Status                                  int
}

func (e *CallError) Error() string { return e.Code + ": " + e.Message }

// Result is what a finished program gave back.
type Result struct {
	Value json.RawMessage // the program's return value as JSON (null when none)
	Log   []string        // console output, one entry a call
	Calls int             // $ calls made
}

// Error codes of a run that did not finish.
const (
	CodeSyntax         = "syntax_error"
	CodeProgram        = "program_error"
	CodeDeadline       = "deadline_exceeded"
	CodeMemory         = "memory_exceeded"
	CodeCalls          = "too_many_calls"
	CodeProgramTooLong = "program_too_large"
	CodeResultTooLarge = "result_too_large"
)

// Error is why a run did not finish; Message names the limit or the line.
type Error struct{ Code, Message string }

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }
