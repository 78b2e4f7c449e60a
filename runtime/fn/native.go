package fn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// Engines a manifest may name. A package without "engine" is WebAssembly.
const (
	EngineWasm   = "wasm"
	EngineNative = "native"
)

// Where a native call finds its broker, inside its sandbox.
const (
	NativeBrokerDir    = "/run/subako"
	NativeBrokerSocket = NativeBrokerDir + "/fetch.sock"
	nativeMaxProcesses = 64
)

// NativeBundle is what a native package runs: a command of the host's
// read-only /usr and its own files, seen read-only in the sandbox. It is
// the package's module: stored and shipped as JSON in place of WebAssembly.
type NativeBundle struct {
	Command []string          `json:"command"`
	Env     []string          `json:"env,omitempty"`
	Files   map[string]string `json:"files,omitempty"` // guest path -> content
	// Binds are host folders seen read-only below /opt/ (typst's compiler,
	// installed by npm beside the server). Only the server installs a
	// native bundle, so a host path here is the operator's.
	Binds []NativeBind `json:"binds,omitempty"`
}

// NativeBind is a host folder a native bundle sees read-only at Guest.
type NativeBind struct {
	Host  string `json:"host"`
	Guest string `json:"guest"`
}

// Limits on a bundle.
const (
	maxBundleFiles = 64
	maxBundleBytes = 4 << 20
)

// ParseNativeBundle decodes and checks a native package's module.
func ParseNativeBundle(data []byte) (NativeBundle, error) {
	var b NativeBundle
	if len(data) > maxBundleBytes {
		return b, fieldErr("module", "is %d bytes; a native bundle may be at most %d", len(data), maxBundleBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fieldErr("module", "not a native bundle ({\"command\": [...], \"files\": {...}}): %v", err)
	}
	if len(b.Command) == 0 || !strings.HasPrefix(b.Command[0], "/") {
		return b, fieldErr("module.command", "must start with an absolute path inside the sandbox")
	}
	if len(b.Files) > maxBundleFiles {
		return b, fieldErr("module.files", "lists %d files; the limit is %d", len(b.Files), maxBundleFiles)
	}
	for p := range b.Files {
		if !strings.HasPrefix(p, "/opt/") || strings.Contains(p, "..") {
			return b, fieldErr("module.files", "%q must be below /opt/ and have no ..", p)
		}
	}
	for i, bd := range b.Binds {
		if !strings.HasPrefix(bd.Host, "/") || !strings.HasPrefix(bd.Guest, "/opt/") || strings.Contains(bd.Guest, "..") {
			return b, fieldErr(fmt.Sprintf("module.binds[%d]", i), "needs an absolute host path and a guest path below /opt/ without ..")
		}
	}
	for i, kv := range b.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return b, fieldErr(fmt.Sprintf("module.env[%d]", i), "must be KEY=VALUE")
		}
	}
	return b, nil
}

// NativeConfig says how native calls are sandboxed; every field has a
// working zero value.
type NativeConfig struct {
	Bwrap      string // default: bwrap on PATH
	UID, GID   int    // host ids of a sandbox when the server is root (default 65534)
	CgroupRoot string // default /sys/fs/cgroup
}

// SetNative configures the native engine (before the first native call).
func (e *Engine) SetNative(c NativeConfig) { e.native = c }

// CleanNative removes what native calls of a server that died left behind
// (staging mounts, broker sockets), older than the longest call could be.
func (e *Engine) CleanNative() { local.CleanOneShots(brokerDirPrefix, e.caps.MaxTimeout+5*time.Minute) }

// loadNative makes a package of a native manifest and its bundle.
func (e *Engine) loadNative(module []byte, m Manifest) (*Package, error) {
	if err := m.Check(e.caps); err != nil {
		return nil, err
	}
	b, err := ParseNativeBundle(module)
	if err != nil {
		return nil, err
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, t := range m.Tools {
		schemas[t.Name], _ = resolveSchema(t.InputSchema)
	}
	return &Package{Manifest: m, SHA256: digest(module), Size: len(module), schemas: schemas, bundle: &b}, nil
}

// callNative runs one call in a fresh bubblewrap sandbox: the same ABI as
// a WebAssembly call (stdin {"tool","input"}, stdout the JSON result,
// /volume per the grant), no network, HTTP only through the broker.
func (e *Engine) callNative(ctx context.Context, p *Package, req CallRequest) (CallResult, error) {
	c, err := e.setUpCall(ctx, p, &req)
	if err != nil {
		return CallResult{}, err
	}
	defer c.release()
	stdin, timeout, memMB := c.stdin, c.timeout, c.memMB

	cfg := e.native
	uid, gid := cfg.UID, cfg.GID
	if uid == 0 {
		uid = 65534
	}
	if gid == 0 {
		gid = 65534
	}
	stdout := &cappedBuffer{limit: e.caps.MaxOutputBytes}
	stderr := &cappedBuffer{limit: e.caps.MaxStderrBytes}
	f := &fetcher{origins: c.origins, credentials: req.Credentials, transport: e.transport, caps: e.caps}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	br, err := startBroker(cctx, f, uid, gid)
	if err != nil {
		return CallResult{}, err
	}
	files := make(map[string][]byte, len(p.bundle.Files))
	for k, v := range p.bundle.Files {
		files[k] = []byte(v)
	}
	env := append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp",
		"SUBAKO_FETCH_SOCKET=" + NativeBrokerSocket,
	}, p.bundle.Env...)
	shot := local.OneShot{
		Bwrap: cfg.Bwrap, UID: uid, GID: gid, CgroupRoot: cfg.CgroupRoot,
		Command: p.bundle.Command, Env: env, Files: files,
		Binds: []local.OneShotBind{{Host: br.dir, Guest: NativeBrokerDir}},
		Stdin: bytes.NewReader(stdin), Stdout: stdout, Stderr: stderr,
		Limits:  sandbox.Limits{MemoryBytes: int64(memMB) << 20, Pids: nativeMaxProcesses},
		Timeout: timeout,
	}
	for _, bd := range p.bundle.Binds {
		shot.Binds = append(shot.Binds, local.OneShotBind{Host: bd.Host, Guest: bd.Guest})
	}
	var vol *nativeVolume
	if req.Volume != nil {
		if vol, err = openNativeVolume(*req.Volume, uid, gid); err != nil {
			br.close()
			return CallResult{}, err
		}
		shot.Binds = append(shot.Binds, local.OneShotBind{Host: req.Volume.Dir, Guest: VolumeGuestPath, Write: req.Volume.Write})
		if req.Volume.Write {
			shot.Env = append(shot.Env, "SUBAKO_VOLUME=write")
			shot.MaxFileBytes = req.Volume.MaxFileBytes
		} else {
			shot.Env = append(shot.Env, "SUBAKO_VOLUME=read")
		}
	}
	run, runErr := local.RunOneShot(cctx, shot)
	cancel()   // the sandbox is gone: a fetch still in flight has no one to answer
	br.close() // waits for that fetch to end: f.fetches is complete after
	res := CallResult{Duration: time.Since(start), Stderr: stderr.String(), Fetches: f.fetches}
	var volErr *CallError
	if vol != nil {
		res.Volume, volErr = vol.after()
	}
	ce := &CallError{Package: p.Key(), Tool: req.Tool, Stderr: res.Stderr}
	switch {
	case runErr != nil:
		ce.Reason, ce.Detail = ErrToolFailed, fmt.Sprintf("the sandbox did not run: %v", runErr)
	case run.Killed == local.KilledCancelled && ctx.Err() != nil:
		ce.Reason, ce.Detail = ErrTimeout, fmt.Sprintf("stopped: the caller gave up (%v)", ctx.Err())
	case run.Killed == local.KilledDeadline, run.Killed == local.KilledCancelled:
		// cctx carries the same deadline as the sandbox's own timer and
		// often ends first: still the call's deadline, not the caller's.
		ce.Reason, ce.Detail = ErrTimeout, fmt.Sprintf("stopped at the deadline of %s", timeout)
	case run.Killed == local.KilledMemory:
		ce.Reason, ce.Detail = ErrMemoryLimit, fmt.Sprintf("ran out of memory: the limit is %d MiB", memMB)
	case volErr != nil:
		volErr.Package, volErr.Tool, volErr.Stderr = p.Key(), req.Tool, res.Stderr
		ce = volErr
	case run.ExitCode != 0:
		ce.Reason, ce.ExitCode = ErrToolFailed, uint32(run.ExitCode)
		ce.Detail = fmt.Sprintf("failed with exit code %d", run.ExitCode)
		if run.LimitsBy == "rlimit" && strings.Contains(res.Stderr, "MemoryError") {
			ce.Reason, ce.Detail = ErrMemoryLimit, fmt.Sprintf("ran out of memory: the limit is %d MiB (RLIMIT_AS)", memMB)
		}
	case stdout.truncated:
		ce.Reason, ce.Detail = ErrOutputTooLarge, fmt.Sprintf("output exceeds the limit of %d bytes", e.caps.MaxOutputBytes)
	case !json.Valid(stdout.Bytes()):
		ce.Reason, ce.Detail = ErrBadOutput, fmt.Sprintf("stdout is not one JSON value (%d bytes)", stdout.Len())
	default:
		ce = nil
	}
	if ce != nil {
		return res, ce
	}
	res.Output = bytes.TrimSpace(stdout.Bytes())
	return res, nil
}

// NativeAvailable says whether this machine can run native packages: bwrap
// is installed and makes a sandbox.
func NativeAvailable(ctx context.Context, c NativeConfig) error {
	var stderr bytes.Buffer
	run, err := local.RunOneShot(ctx, local.OneShot{Bwrap: c.Bwrap, UID: c.UID, GID: c.GID,
		Command: []string{"/bin/true"}, Timeout: 10 * time.Second, Stderr: &stderr})
	if err == nil && run.ExitCode != 0 {
		err = fmt.Errorf("fn: bwrap exited with %d: %s", run.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return err
}
