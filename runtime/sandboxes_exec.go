package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"unicode/utf8"

	"github.com/subako/subako/runtime/sandbox"
)

// runSandboxHere runs one command in the session's own sandbox for that
// grant on this replica, started or restored on demand (runSandbox decides
// where it runs).
func (r *Runtime) runSandboxHere(ctx context.Context, e SandboxExec) (json.RawMessage, error) {
	set := r.sandboxes()
	if set == nil {
		return nil, fmt.Errorf("sandboxes are %w", ErrNotAvailable)
	}
	req, err := decodeExec(e.Input)
	if err != nil {
		return nil, err
	}
	key := sandbox.Key{SessionID: e.SessionID, Grant: e.Grant.Name, Release: e.Grant.Environment.Release, Network: e.Grant.Network.Type}
	r.grantResources(e.Grant, &key)
	ctx = r.withExit(ctx, e, &key) // sandboxes_exit.go
	vol := r.sandboxVolume(ctx, e, &key)
	ctx, liveDone := r.liveExec(ctx, e, req.Command) // output as it happens (sandboxes_live.go)
	defer liveDone()
	res, err := set.mgr.Exec(ctx, key, req)
	if verr := vol.after(ctx); verr != nil {
		out, _ := fitRecorded(res)
		return out, errors.Join(execError(err), verr)
	}
	if err != nil {
		var out json.RawMessage
		if res != (sandbox.ExecResult{}) {
			out, _ = json.Marshal(res) // what a cancelled command printed so far
		}
		return out, execError(err)
	}
	return fitRecorded(res)
}

// fitRecorded makes the result fit the call log (maxOutputBytes), which is
// what the caller is answered from: a clipped JSON would lose the exit code
// and stderr. While it does not fit, the streams are cut further in their
// middle, the longer one first, keeping heads and tails; the byte counts
// stay the full amounts.
func fitRecorded(res sandbox.ExecResult) (json.RawMessage, error) {
	out, err := json.Marshal(res)
	for err == nil && len(out) > maxOutputBytes {
		over := len(out) - maxOutputBytes + 256 // room for the markers and escaping
		cutOut, cutErr := splitCut(over, len(res.Stdout), len(res.Stderr))
		if cutOut > 0 {
			res.Stdout, res.StdoutTruncated = cutMiddle(res.Stdout, cutOut, res.StdoutBytes), true
		}
		if cutErr > 0 {
			res.Stderr, res.StderrTruncated = cutMiddle(res.Stderr, cutErr, res.StderrBytes), true
		}
		out, err = json.Marshal(res)
	}
	return out, err
}

// splitCut shares n bytes to cut between two streams of lengths a and b:
// the longer gives first, down to the shorter's length, then both equally.
func splitCut(n, a, b int) (cutA, cutB int) {
	if a < b {
		cutB, cutA = splitCut(n, b, a)
		return cutA, cutB
	}
	if gap := a - b; gap >= n || b == 0 {
		return n, 0
	}
	rest := n - (a - b)
	return a - b + (rest+1)/2, (rest + 1) / 2
}

// cutMiddle removes at least n bytes from the middle of s, on UTF-8
// boundaries, and says how many of the total bytes printed are left out.
func cutMiddle(s string, n int, total int64) string {
	half := max(len(s)-n, 0) / 2
	head := s[:half]
	for len(head) > 0 && !utf8.RuneStart(s[len(head)]) {
		head = head[:len(head)-1]
	}
	tail := s[len(s)-half:]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	omitted := total - int64(len(head)) - int64(len(tail))
	return head + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + tail
}

// decodeExec reads the exec input and checks every limit, so a bad input is
// answered with the field and the limit rather than a failed start.
func decodeExec(input json.RawMessage) (sandbox.ExecRequest, error) {
	var req sandbox.ExecRequest
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, invalid("input", "invalid_input", "the exec input is not valid: "+err.Error())
	}
	return req, execError(req.Validate())
}

// execError names the input field of a sandbox.FieldError ("input.command"),
// makes a full server a capacity refusal (429 with Retry-After), and turns
// a missing bubblewrap into an instruction an operator can follow.
func execError(err error) error {
	if err == nil {
		return nil
	}
	if fields := execFieldErrors(err); len(fields) > 0 {
		// The call's error is this text alone, so it carries every field.
		detail := fields[0].Detail
		for _, f := range fields[1:] {
			detail += "; " + f.Field + ": " + f.Detail
		}
		return &Error{Kind: KindInvalid, Code: "invalid_input", Title: "Invalid input", Field: fields[0].Field, Detail: detail, Fields: fields}
	}
	var kept *sandbox.KeptError
	if errors.As(err, &kept) {
		return &Error{Kind: KindUnavailable, Code: "workspace_on_down_replica", Title: "Sandbox's newest workspace is on a replica that is down",
			RetryAfter: storeRetry, Detail: kept.Error()}
	}
	var full *sandbox.CapacityError
	if errors.As(err, &full) {
		return overCapacity(full.Error(), full.RetryAfter)
	}
	var disk *sandbox.DiskFullError
	if errors.As(err, &disk) {
		return overCapacity(disk.Error(), sandbox.DiskFullRetry)
	}
	var missing *exec.Error // bwrap or slirp4netns not found where looked for
	if errors.As(err, &missing) {
		return fmt.Errorf("sandboxes need bubblewrap and slirp4netns on this server; its operator installs them with "+
			"`apt-get install -y bubblewrap slirp4netns` (%w)", err)
	}
	return err
}

// execFieldErrors collects the FieldErrors in err, joined or not.
func execFieldErrors(err error) []FieldError {
	var out []FieldError
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, execFieldErrors(e)...)
		}
		return out
	}
	var fe *sandbox.FieldError
	if errors.As(err, &fe) {
		out = append(out, FieldError{Field: "input." + fe.Field, Code: "invalid_input", Detail: fe.Message})
	}
	return out
}
