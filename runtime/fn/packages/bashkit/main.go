// Command bashkit is the Subako function package "bashkit": it runs a bash
// script over the session volume's files with mvdan.cc/sh/v3's interpreter.
// Every command is a Go function inside the module (commands.go and the
// cmd_*.go files): there are no processes and no network. The script's files
// are those of /volume, its working folder, as the function's grant allows.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subako/subako/runtime/fn/packages/bashkit/interp"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/subako/subako/runtime/fn/guest"
)

// Limits of one run. The time limit stops the script inside the module, so
// its output so far comes back; the function's own deadline still applies.
const (
	maxScriptBytes  = 64 << 10
	maxStdinBytes   = 1 << 20
	maxStdoutBytes  = 1 << 20
	maxStderrBytes  = 64 << 10
	maxEnvVars      = 100
	defaultTimeMS   = 8000
	maxTimeMS       = 55000
	maxGoroutines   = 2000 // background jobs and pipeline stages at once
	maxFuncNest     = 1000 // functions calling functions
	volumeDir       = "/volume"
	notFoundMessage = "command not found: %s (bashkit has no processes)"
)

type runInput struct {
	Script    string            `json:"script"`
	Stdin     string            `json:"stdin"`
	Env       map[string]string `json:"env"`
	TimeoutMS int               `json:"timeout_ms"`
}

type runOutput struct {
	Stdout       string   `json:"stdout"`
	Stderr       string   `json:"stderr"`
	ExitCode     int      `json:"exit_code"`
	FilesWritten []string `json:"files_written"`
	// Truncated says stdout or stderr passed its limit and was cut there.
	Truncated bool `json:"truncated,omitempty"`
	// Stopped says why the script was stopped before it ended: the time
	// limit, the output limit or too many commands at once.
	Stopped string `json:"stopped,omitempty"`
}

// stopCtx is the script's context: its Err turns non-nil once the time is up
// or a limit was hit. It reads the clock itself, since on wasip1 a busy loop
// never yields to the goroutine a context.WithTimeout timer would run in.
type stopCtx struct {
	context.Context
	deadline time.Time
	reason   atomic.Pointer[string]
	calls    atomic.Uint64
}

func (c *stopCtx) Err() error {
	if r := c.reason.Load(); r != nil {
		return errors.New(*r)
	}
	// The clock is a host call: read it on every 64th check only.
	if c.calls.Add(1)%64 == 0 && time.Now().After(c.deadline) {
		c.stop(fmt.Sprintf("time limit: the script ran past %s and was stopped", c.deadline.Sub(started).Round(time.Millisecond)))
		return c.Err()
	}
	return nil
}

func (c *stopCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *stopCtx) stop(reason string) { c.reason.CompareAndSwap(nil, &reason) }

var started time.Time

// capped keeps the first limit bytes written to it; past them it stops the script.
type capped struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	limit   int
	cut     bool
	stopper *stopCtx
	name    string
}

func (w *capped) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.limit - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		if !w.cut {
			w.cut = true
			w.stopper.stop(fmt.Sprintf("output limit: %s passed %d bytes and was cut there", w.name, w.limit))
		}
		return max(room, 0), errOutputLimit
	}
	return w.buf.Write(p)
}

var errOutputLimit = errors.New("output limit reached")

func run(in runInput) (any, error) {
	started = time.Now()
	switch {
	case strings.TrimSpace(in.Script) == "":
		return nil, errors.New("script: empty")
	case len(in.Script) > maxScriptBytes:
		return nil, fmt.Errorf("script: %d bytes; the limit is %d", len(in.Script), maxScriptBytes)
	case len(in.Stdin) > maxStdinBytes:
		return nil, fmt.Errorf("stdin: %d bytes; the limit is %d", len(in.Stdin), maxStdinBytes)
	case len(in.Env) > maxEnvVars:
		return nil, fmt.Errorf("env: %d variables; the limit is %d", len(in.Env), maxEnvVars)
	case in.TimeoutMS < 0 || in.TimeoutMS > maxTimeMS:
		return nil, fmt.Errorf("timeout_ms: %d; it must be between 1 and %d", in.TimeoutMS, maxTimeMS)
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(in.Script), "script")
	if err != nil {
		return nil, fmt.Errorf("script: %v", err)
	}
	timeout := time.Duration(cmpOr(in.TimeoutMS, defaultTimeMS)) * time.Millisecond
	ctx := &stopCtx{Context: context.Background(), deadline: started.Add(timeout)}
	stdout := &capped{limit: maxStdoutBytes, stopper: ctx, name: "stdout"}
	stderr := &capped{limit: maxStderrBytes, stopper: ctx, name: "stderr"}

	dir := volumeDir
	if st, err := os.Stat(volumeDir); err != nil || !st.IsDir() {
		dir = "/" // no volume granted: the script still runs on its stdin
	}
	env := []string{"HOME=" + volumeDir, "PWD=" + dir, "PATH=/bin", "SHELL=/bin/bash", "USER=bashkit", "LANG=C.UTF-8", "TMPDIR=" + volumeDir}
	keys := make([]string, 0, len(in.Env))
	for k := range in.Env {
		if !syntax.ValidName(k) {
			return nil, fmt.Errorf("env: %q is not a valid variable name", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+in.Env[k])
	}
	opts := []interp.RunnerOption{
		interp.StdIO(strings.NewReader(in.Stdin), stdout, stderr),
		interp.Env(expand.ListEnviron(env...)),
		interp.Params("-o", "pipefail"),
		interp.CallHandler(func(ctx context.Context, args []string) ([]string, error) {
			if runtime.NumGoroutine() > maxGoroutines {
				sc.stop(fmt.Sprintf("too many commands at once: more than %d background jobs and pipeline stages", maxGoroutines))
			}
			return args, sc.Err()
		}),
		interp.ExecHandlers(execHandler),
		interp.OpenHandler(openHandler),
	}
	interp.MaxFuncNest = maxFuncNest
	if dir == volumeDir {
		opts = append(opts, interp.Dir(dir)) // without a volume, "/" (and nothing in it)
	}
	r, err := interp.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("start the interpreter: %v", err)
	}
	sc = ctx
	runErr := r.Run(ctx, file)
	out := runOutput{FilesWritten: filesWritten()}
	if status, ok := interp.IsExitStatus(runErr); ok {
		out.ExitCode = int(status)
	} else if runErr != nil {
		out.ExitCode = 1
		if r := ctx.reason.Load(); r != nil {
			out.Stopped = *r
			out.ExitCode = 124
		} else {
			fmt.Fprintf(stderr, "bashkit: %v\n", runErr)
		}
	}
	if r := ctx.reason.Load(); r != nil && out.Stopped == "" {
		out.Stopped = *r
	}
	if out.Stopped != "" {
		stderr.limit += 1024 // the reason always fits
		fmt.Fprintf(stderr, "bashkit: %s\n", out.Stopped)
	}
	out.Stdout, out.Stderr = stdout.buf.String(), stderr.buf.String()
	out.Truncated = stdout.cut || stderr.cut
	return out, nil
}

// sc is the running script's context, for handlers that only get theirs.
var sc *stopCtx

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// written notes the files the script wrote, as paths under /volume.
var written = map[string]bool{}
var writtenMu sync.Mutex

func noteWrite(path string) {
	rel, err := filepath.Rel(volumeDir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return
	}
	writtenMu.Lock()
	written[rel] = true
	writtenMu.Unlock()
}

// filesWritten lists the written paths that are still files when the script ends.
func filesWritten() []string {
	list := []string{}
	for rel := range written {
		if st, err := os.Stat(filepath.Join(volumeDir, rel)); err == nil && st.Mode().IsRegular() {
			list = append(list, rel)
		}
	}
	sort.Strings(list)
	return list
}

// fileError words a file error for the script's stderr: a read-only volume
// and one past its limits say so.
func fileError(path string, err error) error {
	return fmt.Errorf("%s: %s", path, fileReason(err))
}

func fileReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrPermission), strings.EqualFold(err.Error(), "read-only file system"):
		return "read-only: this function's grant gives the volume read only (volume: read)"
	case errors.Is(err, os.ErrNotExist):
		return "No such file or directory"
	case err.Error() == "operation not permitted":
		return "refused: past the session volume's limits (file size, file count or total size)"
	}
	return err.Error()
}

func openHandler(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if path == "/dev/null" {
		return devNull{}, nil
	}
	hc := interp.HandlerCtx(ctx)
	abs := absPath(hc.Dir, path)
	writes := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_TRUNC) != 0
	f, err := os.OpenFile(abs, flag, perm)
	if err != nil {
		// A PathError fails the redirection, not the whole script.
		op := "cannot open"
		if writes {
			op = "cannot write"
		}
		return nil, &os.PathError{Op: op, Path: path, Err: errors.New(fileReason(err))}
	}
	if writes {
		noteWrite(abs)
	}
	return f, nil
}

func absPath(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

func execHandler(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		hc := interp.HandlerCtx(ctx)
		cmd, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(hc.Stderr, notFoundMessage+"\n", args[0])
			return interp.NewExitStatus(127)
		}
		c := &cmdCtx{ctx: ctx, name: args[0], args: args[1:], dir: hc.Dir, env: hc.Env,
			in: hc.Stdin, out: hc.Stdout, errw: hc.Stderr}
		if c.in == nil {
			c.in = strings.NewReader("")
		}
		status := cmd(c)
		if err := sc.Err(); err != nil {
			return err
		}
		if status != 0 {
			return interp.NewExitStatus(uint8(status))
		}
		return nil
	}
}

func main() {
	guest.Main(guest.Tools{"run": guest.Typed(run)})
}

// devNull is /dev/null, which WASI does not have.
type devNull struct{}

func (devNull) Read([]byte) (int, error)    { return 0, io.EOF }
func (devNull) Write(p []byte) (int, error) { return len(p), nil }
func (devNull) Close() error                { return nil }
