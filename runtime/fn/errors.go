package fn

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// FieldError is bad input a user can fix: a manifest field, a call argument or
// the module itself. Field is a JSON path ("tools[1].name") or "wasm".
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return "fn: " + e.Field + ": " + e.Detail }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// ErrDuplicateVersion is what errors.Is reports for a DuplicateVersionError.
var ErrDuplicateVersion = errors.New("fn: package version already installed")

// DuplicateVersionError refuses a second install of the same name and version: a
// published version must keep meaning the same code. A store that finds the row
// already present returns one too, so callers check a single error.
type DuplicateVersionError struct {
	Name, Version string
}

func (e *DuplicateVersionError) Error() string {
	return fmt.Sprintf("fn: %s@%s is already installed; publish a new version instead", e.Name, e.Version)
}

// Is makes errors.Is(err, ErrDuplicateVersion) true.
func (e *DuplicateVersionError) Is(target error) bool { return target == ErrDuplicateVersion }

// Reasons a call fails; CallError unwraps to one of them.
var (
	ErrUnknownTool    = errors.New("unknown tool")
	ErrInvalidInput   = errors.New("invalid input")
	ErrTimeout        = errors.New("deadline exceeded")
	ErrMemoryLimit    = errors.New("memory limit reached")
	ErrToolFailed     = errors.New("tool failed")
	ErrBadOutput      = errors.New("output is not JSON")
	ErrOutputTooLarge = errors.New("output too large")
)

// CallError is a failed call. Its message is meant for the model and the
// person reading the call's record; Stderr is the guest's capped stderr.
type CallError struct {
	Package  string // name@version
	Tool     string
	Reason   error  // one of the Err* values above
	Detail   string // what happened, with the limit when one was hit
	ExitCode uint32 // the guest's exit code when it exited, else 0
	Stderr   string
}

func (e *CallError) Error() string {
	msg := fmt.Sprintf("fn: %s %s: %s", e.Package, e.Tool, e.Detail)
	// A timeout or memory error says all there is; the Go runtime's goroutine
	// dump that follows those in stderr would only bury it.
	if s := strings.TrimSpace(e.Stderr); s != "" && e.Reason != ErrTimeout && e.Reason != ErrMemoryLimit {
		msg += "\nstderr:\n" + s
	}
	return msg
}

func (e *CallError) Unwrap() error { return e.Reason }

// ErrCapacity is what errors.Is reports for a CapacityError.
var ErrCapacity = errors.New("fn: over capacity")

// CapacityError refuses a call the engine has no room for right now: every
// instance slot or the whole memory budget is taken. Nothing ran; the same
// call may well succeed after RetryAfter.
type CapacityError struct {
	Detail     string
	RetryAfter time.Duration
}

func (e *CapacityError) Error() string { return "fn: over capacity: " + e.Detail }

// Is makes errors.Is(err, ErrCapacity) true.
func (e *CapacityError) Is(target error) bool { return target == ErrCapacity }
