package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// pipeGrace bounds how long a finished command's output is still read: a
// background job that keeps stdout open must not hold the exec's answer.
const pipeGrace = 500 * time.Millisecond

// runCommand runs one exec in its own pid namespace, whose first process is
// a small init (execInit): when the command ends, or its timeout or a
// cancel kills the init, the kernel kills everything the command started,
// background jobs and setsid'd daemons included, so none outlives its exec
// or holds the sandbox's pid limit. An agent that may not make namespaces (no
// CAP_SYS_ADMIN) falls back to a process group. An exec takes warm's
// waiting init, if any, unless it sets one of the variables warmable leaves
// out (agent_warm.go).
func runCommand(ctx context.Context, req ExecRequest, baseEnv []string, warm *warmPool) (ExecResult, error) {
	req = req.WithDefaults()
	if err := req.Validate(); err != nil {
		return ExecResult{}, err
	}
	if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
		return ExecResult{}, &FieldError{"cwd", fmt.Sprintf("%q is not a folder in the sandbox", req.Cwd)}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutSecs)*time.Second)
	defer cancel()

	newPID := canNewPID()
	if newPID && warm != nil && warmable(req) {
		if w := warm.take(ctx); w != nil {
			res, err := w.run(ctx, req)
			if !errors.Is(err, errWarmGone) {
				return res, err
			}
		}
	}
	var stdout, stderr Output
	cmd := execInitCommand(ctx, req.Command, newPID)
	cmd.Dir = req.Cwd
	cmd.Env = commandEnv(baseEnv, req.Env)
	if newPID {
		slot := pidSlots.take()
		defer pidSlots.give(slot)
		cmd.Env = withSlot(cmd.Env, slot)
	}
	outW, errW, liveDone := liveWriters(ctx, &stdout, &stderr) // output frames while it runs (agent_live.go)
	defer liveDone()
	cmd.Stdout, cmd.Stderr = outW, errW
	if req.Stdin != "" {
		cmd.Stdin = strings.NewReader(req.Stdin)
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace

	started := time.Now()
	if err := startWithoutCaps(cmd); err != nil {
		return ExecResult{}, fmt.Errorf("agent: start sh: %w", err)
	}
	return commandResult(ctx, cmd, cmd.Wait(), started, &stdout, &stderr)
}

// commandResult is the result of cmd, started at started and waited for
// (err), whose output went to stdout and stderr.
func commandResult(ctx context.Context, cmd *exec.Cmd, err error, started time.Time, stdout, stderr *Output) (ExecResult, error) {
	res := ExecResult{DurationMs: time.Since(started).Milliseconds()}
	var exitErr *exec.ExitError
	// The init may exit on its own while the kernel still ends what the
	// command left (a fork bomb's thousand processes take a second), and
	// the deadline come meanwhile: Wait then reports the deadline, or the
	// failed kill of a group already gone, though the exec did end.
	outlived := err != nil && cmd.ProcessState != nil && ctx.Err() != nil
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) && !outlived {
		return ExecResult{}, fmt.Errorf("agent: run: %w", err)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	res.ExitCode = ws.ExitStatus()
	if ws.Signaled() {
		res.ExitCode = 128 + int(ws.Signal())
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && (ws.Signaled() || outlived) {
		res.TimedOut, res.ExitCode = true, TimeoutExitCode
	}
	res.Stdout, res.StdoutTruncated, res.StdoutBytes = stdout.Result()
	res.Stderr, res.StderrTruncated, res.StderrBytes = stderr.Result()
	return res, nil
}

// commandEnv layers the request's variables over the base environment.
func commandEnv(base []string, extra map[string]string) []string {
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, override := extra[name]; !override {
			env = append(env, kv)
		}
	}
	for name, value := range extra {
		env = append(env, name+"="+value)
	}
	slices.Sort(env)
	return env
}
