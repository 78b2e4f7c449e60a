package codemode

import (
	"context"
	"errors"
)

// Run strips source's types, runs it in a fresh instance with $ built from
// names, and returns its value and log. On failure the Result still holds the
// log and call count so far, and the error is an *Error.
func Run(ctx context.Context, source string, names []string, call Call, lim Limits) (Result, error) {
	return Result{}, errors.New("codemode: not yet implemented")
}
