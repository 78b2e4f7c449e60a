package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error for the interfaces: each maps it to its own form
// (an HTTP status, a field message, an exit code).
type Kind int

const (
	KindInternal Kind = iota
	KindInvalid
	KindNotFound
	KindConflict
	KindForbidden
	KindUnauthenticated
	// KindTooMany is a refusal that passes with time (a throttle, a full
	// capacity): RetryAfter says when to try again.
	KindTooMany
	// KindUnavailable is a part the server depends on that is down (the
	// archive store): nothing was changed, and RetryAfter says when to try
	// again.
	KindUnavailable
)

// FieldError is one problem with one input field, named by its path.
type FieldError struct {
	Field  string `json:"field"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Error is an error a caller can act on: it says what kind it is, a stable code,
// a human title and detail, and (for bad input) which field.
type Error struct {
	Kind              Kind
	Code              string
	Title             string
	Detail            string
	Field             string
	MissingPermission string
	Fields            []FieldError
	// RetryAfter, when set, is how long a caller should wait before trying
	// again; HTTP answers carry it as Retry-After.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Detail)
	}
	if e.Detail != "" {
		return e.Detail
	}
	return e.Title
}

// AsError finds a runtime *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

func invalid(field, code, detail string) *Error {
	return &Error{Kind: KindInvalid, Code: code, Title: "Invalid input", Detail: detail, Field: field,
		Fields: []FieldError{{Field: field, Code: code, Detail: detail}}}
}

func notFound(what, id string) *Error {
	return &Error{Kind: KindNotFound, Code: "not_found", Title: "Not found", Detail: fmt.Sprintf("no %s %q", what, id)}
}

func conflict(code, detail string) *Error {
	return &Error{Kind: KindConflict, Code: code, Title: "Conflict", Detail: detail}
}

func forbidden(code, detail string) *Error {
	return &Error{Kind: KindForbidden, Code: code, Title: "Forbidden", Detail: detail}
}

// denied is the refusal of a verb p lacks the permission for; detail, when
// given, says why in the terms of the target (an owner, an own call).
func denied(p Principal, permission, detail string) *Error {
	if detail == "" {
		detail = fmt.Sprintf("%s (%s) may not %s", p.Label, accessLabel(p), permission)
		if p.narrowed() {
			// The person may hold it: the token was narrowed to less.
			detail += " with this token (narrowed to its own permissions)"
		}
	}
	return &Error{Kind: KindForbidden, Code: "permission_denied", Title: "Permission denied", Detail: detail, MissingPermission: permission}
}

// ErrUnauthenticated answers a request with no valid credential.
var ErrUnauthenticated = &Error{Kind: KindUnauthenticated, Code: "unauthenticated", Title: "Sign in required",
	Detail: "this request needs a valid session or bearer token"}
