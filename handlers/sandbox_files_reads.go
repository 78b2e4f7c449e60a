package handlers

import (
	"fmt"
	"time"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
)

// MaxSandboxFileReads is how many sandbox file downloads may be in flight
// at once: each holds its file (up to sandbox.MaxFileReadBytes) in memory
// until its client has taken it, so together they hold at most
// 8 × 32 MiB, however many slow clients ask.
const MaxSandboxFileReads = 8

var sandboxFileReads = make(chan struct{}, MaxSandboxFileReads)

// takeFileRead takes a place among the downloads in flight, or answers 429
// too_many_reads; release gives it back once the answer is written.
func takeFileRead() (release func(), err error) {
	select {
	case sandboxFileReads <- struct{}{}:
		return func() { <-sandboxFileReads }, nil
	default:
		return nil, &runtime.Error{Kind: runtime.KindTooMany, Code: "too_many_reads", Title: "Too many file reads",
			Detail: fmt.Sprintf("%d sandbox file downloads are in flight, the most at once (each holds up to %d MiB in memory "+
				"until its client has it); try again in a moment", MaxSandboxFileReads, sandbox.MaxFileReadBytes>>20),
			RetryAfter: time.Second}
	}
}
