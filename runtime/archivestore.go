package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// CodeStoreUnavailable answers a verb that needed the archive store while it
// was down (503): nothing was changed, the archive is where it was.
const CodeStoreUnavailable = "store_unavailable"

// storeRetry is the Retry-After of a store that is down.
const storeRetry = 30 * time.Second

// storeDown turns an archive store that could not be reached into a 503
// naming the store (never its keys) and what was tried; nil for any other
// error. The store's own error goes to the log, not to the caller.
func (r *Runtime) storeDown(err error, what string) *Error {
	var u *archive.UnavailableError
	if !errors.As(err, &u) {
		return nil
	}
	r.opts.Log.Warn("runtime: archive store unavailable", "store", u.Store, "op", u.Op, "err", u.Err)
	return storeUnavailable(u, what)
}

func storeUnavailable(u *archive.UnavailableError, what string) *Error {
	return &Error{Kind: KindUnavailable, Code: CodeStoreUnavailable, Title: "Archive store unavailable", RetryAfter: storeRetry,
		Detail: fmt.Sprintf("the archive store %s is unavailable (%s failed), so %s; nothing was changed or lost: try again once it answers", u.Store, u.Op, what)}
}
