package fn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// CallRequest is one tool call. Timeout and MemoryLimitMB may lower the
// manifest's limits, never raise them; zero means the manifest's.
type CallRequest struct {
	Tool          string
	Input         json.RawMessage // a JSON object; empty means {}
	Origins       []string        // the grant's origins, the only ones http_fetch reaches
	Timeout       time.Duration
	MemoryLimitMB int
	// Credentials attaches the session's credential for the request's origin.
	// It runs on the host, after the guest's request has been copied out and its
	// own credential headers dropped, on the first request and on every redirect.
	Credentials func(*http.Request)
	// Volume, when set, mounts the session's volume at /volume (volume.go).
	Volume *VolumeMount
}

// CallResult is what a call produced. Duration and Stderr are set even when
// the call fails, so the caller can record and bill it.
type CallResult struct {
	Output   json.RawMessage
	Stderr   string // capped at Caps.MaxStderrBytes
	Duration time.Duration
	Fetches  []Fetch
	// Volume lists the files the call read, wrote and deleted in /volume.
	Volume []VolumeAccess
}

// Call runs one tool of p in a fresh instance: fresh memory, no files, no
// environment, stdin {"tool", "input"}, stdout the JSON result.
func (e *Engine) Call(ctx context.Context, p *Package, req CallRequest) (CallResult, error) {
	if p.bundle != nil {
		return e.callNative(ctx, p, req)
	}
	c, err := e.setUpCall(ctx, p, &req)
	if err != nil {
		return CallResult{}, err
	}
	defer c.release()
	stdin, timeout, memMB := c.stdin, c.timeout, c.memMB
	stdout := &cappedBuffer{limit: e.caps.MaxOutputBytes}
	stderr := &cappedBuffer{limit: e.caps.MaxStderrBytes}
	f := &fetcher{origins: c.origins, credentials: req.Credentials, transport: e.transport, caps: e.caps}
	mem := newLimitedMemory(uint64(memMB)<<20, e.onFree)

	start := time.Now() // before the deadline is set, so Duration covers it
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cctx = context.WithValue(cctx, fetcherKey{}, f)
	cctx = experimental.WithMemoryAllocator(cctx, mem)
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances of one package run at once
		WithArgs(p.Manifest.Name).
		WithStdin(bytes.NewReader(stdin)).WithStdout(stdout).WithStderr(stderr).
		WithSysWalltime().WithSysNanotime().WithNanosleep(sleeper(cctx)).
		WithRandSource(rand.Reader)
	var vfs *volumeFS
	if req.Volume != nil {
		vfs = newVolumeFS(*req.Volume)
		cfg = cfg.WithFSConfig(vfs.config())
	}

	mod, runErr := e.runtime.InstantiateModule(cctx, p.compiled, cfg)
	if mod != nil {
		_ = mod.Close(ctx) // a command whose _start returned without proc_exit
	}
	res := CallResult{Duration: time.Since(start), Stderr: stderr.String(), Fetches: f.fetches}
	if vfs != nil {
		res.Volume = vfs.Accesses()
	}
	if err := e.outcome(ctx, p, req.Tool, runErr, mem, timeout, memMB, stdout); err != nil {
		err.Stderr = res.Stderr
		return res, err
	}
	res.Output = bytes.TrimSpace(stdout.Bytes())
	return res, nil
}

// callSetUp is what both engines check and take before a call runs.
type callSetUp struct {
	stdin   []byte
	origins map[string]bool
	timeout time.Duration
	memMB   int
	release func()
}

// setUpCall checks the call and takes its room. Room is taken after the
// input checks, so a bad call never waits, and before the clock starts:
// time in line is not billed.
func (e *Engine) setUpCall(ctx context.Context, p *Package, req *CallRequest) (callSetUp, error) {
	stdin, err := e.stdin(p, req)
	if err != nil {
		return callSetUp{}, err
	}
	origins, err := parseOrigins(req.Origins)
	if err != nil {
		return callSetUp{}, err
	}
	timeout := clamp(req.Timeout, effectiveTimeout(p.Manifest.Limits, e.caps), e.caps.MaxTimeout)
	memMB := clamp(req.MemoryLimitMB, effectiveMemoryMB(p.Manifest.Limits, e.caps), e.caps.MaxMemoryMB)
	release, err := e.gate.acquire(ctx, memMB)
	if err != nil {
		return callSetUp{}, err
	}
	return callSetUp{stdin: stdin, origins: origins, timeout: timeout, memMB: memMB, release: release}, nil
}

// stdin checks the tool and input and encodes what the guest reads.
func (e *Engine) stdin(p *Package, req *CallRequest) ([]byte, error) {
	fail := func(reason error, format string, args ...any) error {
		return &CallError{Package: p.Key(), Tool: req.Tool, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	schema, ok := p.schemas[req.Tool]
	if !ok {
		return nil, fail(ErrUnknownTool, "unknown tool; %s offers %s", p.Key(), toolNames(p.Manifest))
	}
	if len(bytes.TrimSpace(req.Input)) == 0 {
		req.Input = json.RawMessage("{}")
	}
	if len(req.Input) > e.caps.MaxInputBytes {
		return nil, fail(ErrInvalidInput, "input is %d bytes; the limit is %d", len(req.Input), e.caps.MaxInputBytes)
	}
	var v any
	if err := json.Unmarshal(req.Input, &v); err != nil {
		return nil, fail(ErrInvalidInput, "input is not valid JSON: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		return nil, fail(ErrInvalidInput, "input does not match the tool's input_schema: %v", err)
	}
	return json.Marshal(struct {
		Tool  string          `json:"tool"`
		Input json.RawMessage `json:"input"`
	}{req.Tool, req.Input})
}

// outcome turns how the instance ended into the call's error, if any.
func (e *Engine) outcome(ctx context.Context, p *Package, tool string, runErr error, mem *limitedMemory,
	timeout time.Duration, memMB int, stdout *cappedBuffer) *CallError {
	ce := &CallError{Package: p.Key(), Tool: tool}
	var exit *sys.ExitError
	switch {
	case mem.refused:
		ce.Reason, ce.Detail = ErrMemoryLimit, fmt.Sprintf("ran out of memory: the limit is %d MiB", memMB)
	case runErr != nil && ctx.Err() != nil:
		ce.Reason, ce.Detail = ErrTimeout, fmt.Sprintf("stopped: the caller gave up (%v)", ctx.Err())
	case errors.Is(runErr, context.DeadlineExceeded):
		ce.Reason, ce.Detail = ErrTimeout, fmt.Sprintf("stopped at the deadline of %s", timeout)
	case errors.As(runErr, &exit):
		ce.Reason, ce.ExitCode = ErrToolFailed, exit.ExitCode()
		ce.Detail = fmt.Sprintf("failed with exit code %d", exit.ExitCode())
	case runErr != nil:
		ce.Reason, ce.Detail = ErrToolFailed, fmt.Sprintf("trapped: %v", runErr)
	case stdout.truncated:
		ce.Reason, ce.Detail = ErrOutputTooLarge, fmt.Sprintf("output exceeds the limit of %d bytes", e.caps.MaxOutputBytes)
	case !json.Valid(stdout.Bytes()):
		ce.Reason, ce.Detail = ErrBadOutput, fmt.Sprintf("stdout is not one JSON value (%d bytes)", stdout.Len())
	default:
		return nil
	}
	return ce
}

// sleeper lets WASI's poll_oneoff sleep for real but not past the call's end,
// so a guest sleeping for an hour does not hold its caller.
func sleeper(ctx context.Context) func(ns int64) {
	return func(ns int64) {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// clamp picks the smallest positive of asked and def, within limit.
func clamp[T int | time.Duration](asked, def, limit T) T {
	v := def
	if asked > 0 && asked < v {
		v = asked
	}
	return min(v, limit)
}

func toolNames(m Manifest) string {
	names := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}
