package runtime

import (
	"fmt"
	"strings"
	"time"
)

// CodeCapacity is the code of a refusal for want of room on the server
// (function instances, their memory): nothing ran, and the same call may
// well succeed after RetryAfter.
const CodeCapacity = "capacity"

// A refused call keeps why in its reason, and how long to wait at its end,
// so ToolCall.create can answer 429 with Retry-After from the record alone,
// whichever process ran the call.
const (
	capacityPrefix = "over capacity: "
	capacityRetry  = "; try again in "
)

// overCapacity is the error an executor returns when the server has no room
// for a call; detail says what is full and the flag that sets it.
func overCapacity(detail string, retryAfter time.Duration) *Error {
	retryAfter = max(retryAfter, time.Second)
	return &Error{Kind: KindTooMany, Code: CodeCapacity, Title: "Over capacity",
		Detail: capacityPrefix + detail + capacityRetry + retryAfter.String(), RetryAfter: retryAfter}
}

// recordRefusal turns a finished call's update into a refusal when err is
// a capacity refusal: the call never ran, like a call a policy denied.
func recordRefusal(err error, upd map[string]any) {
	if e, ok := AsError(err); ok && e.Code == CodeCapacity {
		upd["status"], upd["error"], upd["reason"] = CallRefused, "", truncate(e.Detail, 2000)
	}
}

// capacityRefusal is the error ToolCall.create answers for a call refused
// for want of room, nil for any other.
func capacityRefusal(v ToolCallView) error {
	if v.Status != CallRefused || !strings.HasPrefix(v.Reason, capacityPrefix) {
		return nil
	}
	retry := 5 * time.Second
	if i := strings.LastIndex(v.Reason, capacityRetry); i >= 0 {
		if d, err := time.ParseDuration(v.Reason[i+len(capacityRetry):]); err == nil {
			retry = d
		}
	}
	return &Error{Kind: KindTooMany, Code: CodeCapacity, Title: "Over capacity", RetryAfter: retry,
		Detail: fmt.Sprintf("tool call %s was refused, %s", v.ID, v.Reason)}
}
