package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A warm init (issue 11): the next exec's pid namespace, started between
// execs. Its init (PID 1, the shell of execInit) has joined a pid slot and
// forked the subshell that will become the command's `sh -c`; that subshell
// waits for the command on a pipe. An exec then starts one process (the
// `sh -c`, as the baseline does) where a cold one starts two shells, makes
// the namespace and moves the init into its slot. Everything issue 10
// guarantees still holds: the command is not PID 1 (kill $$ works), the
// init reaps and its exit ends every process of the exec, the timeout kills
// the init's group. The namespace is the exec's alone: the init is used once.
//
// The init was started in the default folder with the base environment. An
// exec with a folder or variables of its own has its subshell change to
// that folder (`cd -P`, as the kernel's chdir of a cold init resolves it,
// with no OLDPWD left behind) and export its variables before it becomes
// the command, so what a command sees (its environment, folder, $$,
// signals) is what a cold init gives it. A folder the subshell cannot
// enter ends it before its command: the exec then runs under a cold init,
// which reports the folder as a cold exec always did.

// warmInitScript is execInit waiting for its command: fd 3 is the pipe the
// agent writes a shell assignment of the command to (and `exec </dev/null`
// when the exec has no stdin), fd 0 the command's stdin pipe. The subshell
// writes a byte to fd 4 just before it becomes the command: an init that
// ends without it never ran the command (its subshell was killed or could
// not fork), and the exec runs under a cold init instead.
const warmInitScript = `exec 5>&2 2>/dev/null
if [ -n "$` + execSlotEnv + `" ]; then echo 0 > "$` + execSlotEnv + `/cgroup.procs"; fi
unset ` + execSlotEnv + `
(. /dev/fd/3 && echo >&4 && exec /bin/sh -c "$subako_command" 2>&5 3<&- 4>&- 5>&-)
exit $?`

// warmable reports whether req can take a warm init: not when it sets PWD
// or OLDPWD (a shell's own, which a cold init's shell checks against its
// folder), the dynamic loader's or glibc's variables (LD_*,
// GLIBC_TUNABLES: under a cold init they act on the init's shell too, so
// LD_PRELOAD's errors or LD_SHOW_AUXV's dump print twice there), nor a
// variable of Subako's own (SUBAKO_, subako_: the init's slot, the
// subshell's command).
func warmable(req ExecRequest) bool {
	for name := range req.Env {
		switch {
		case name == "PWD", name == "OLDPWD", name == "GLIBC_TUNABLES",
			strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "SUBAKO_"), strings.HasPrefix(name, "subako_"):
			return false
		}
	}
	return true
}

// warmScript is what the subshell sources before it becomes req's
// command: its stdin, folder and variables, then the command itself in
// subako_command. A step that fails exits the subshell before its mark.
func warmScript(req ExecRequest) string {
	var s strings.Builder
	if req.Stdin == "" {
		s.WriteString("exec </dev/null\n")
	}
	if req.Cwd != DefaultCwd {
		s.WriteString("cd -P -- " + shellQuote(req.Cwd) + " || exit 1\nunset OLDPWD\n")
	}
	for _, name := range slices.Sorted(maps.Keys(req.Env)) {
		s.WriteString("export " + name + "=" + shellQuote(req.Env[name]) + " || exit 1\n")
	}
	s.WriteString("subako_command=" + shellQuote(req.Command) + "\n")
	return s.String()
}

// warmInit is one started init waiting for its command.
type warmInit struct {
	cmd            *exec.Cmd
	ctl, stdin     *os.File // the agent's ends of the command and stdin pipes
	started        *os.File // read end of the pipe the subshell marks its exec on
	slot           string
	stdout, stderr switchWriter
	exited         chan struct{} // closed when the init has ended and been waited for
	waitErr        error
	ran            bool // the subshell became the command
}

// switchWriter forwards to the writer the exec that takes the init sets.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

// warmPool holds at most one warm init, and knows when one is being started.
type warmPool struct {
	mu       sync.Mutex
	ready    *warmInit
	starting chan struct{} // closed when the init being started is ready (or failed); nil when none is
	closed   bool
}

// take hands out the waiting init, if any. An init being started is waited
// for (until ctx ends): its start is already under way, so taking it costs
// at most what starting a cold one would.
func (p *warmPool) take(ctx context.Context) *warmInit {
	p.mu.Lock()
	if p.ready == nil && p.starting != nil {
		starting := p.starting
		p.mu.Unlock()
		select {
		case <-starting:
		case <-ctx.Done():
		}
		p.mu.Lock()
	}
	w := p.ready
	p.ready = nil
	p.mu.Unlock()
	return w
}

// begin marks a start of the next warm init under way, unless one waits,
// is starting, or the pool is closed (or cannot hold inits here); the
// caller that gets true must call finish.
func (p *warmPool) begin() bool {
	if !canNewPID() || !hasDevFD() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready != nil || p.starting != nil || p.closed {
		return false
	}
	p.starting = make(chan struct{})
	return true
}

// finish starts the init begin marked and hands it to the pool (or ends it
// if the pool closed meanwhile).
func (p *warmPool) finish(baseEnv []string) {
	w, err := startWarmInit(baseEnv)
	p.mu.Lock()
	closed := p.closed
	if err == nil && !closed {
		p.ready = w
	}
	starting := p.starting
	p.starting = nil
	p.mu.Unlock()
	if err == nil && closed {
		w.discard()
	}
	close(starting)
}

// refill starts the next warm init unless one waits or is starting. It is
// called after an exec's answer went out, so its cost is between execs.
func (p *warmPool) refill(baseEnv []string) {
	if p.begin() {
		p.finish(baseEnv)
	}
}

// close ends the waiting init, and one being started once it is, and
// starts no more.
func (p *warmPool) close() {
	p.mu.Lock()
	p.closed = true
	w := p.ready
	p.ready = nil
	starting := p.starting
	p.mu.Unlock()
	if w != nil {
		w.discard()
	}
	if starting != nil {
		<-starting // finish sees closed and discards it
	}
}

// hasDevFD reports whether /dev/fd, which the warm init reads its command
// through, is there: without it the cold init serves every exec.
var hasDevFD = sync.OnceValue(func() bool {
	_, err := os.Stat("/dev/fd/0")
	return err == nil
})

func startWarmInit(baseEnv []string) (*warmInit, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	startR, startW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		inR.Close()
		inW.Close()
		return nil, err
	}
	w := &warmInit{ctl: ctlW, stdin: inW, started: startR, exited: make(chan struct{})}
	cmd := exec.Command("/bin/sh", "-c", warmInitScript, "subako-exec")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID}
	cmd.Dir = DefaultCwd
	cmd.Env = commandEnv(baseEnv, nil)
	w.slot = pidSlots.take()
	cmd.Env = withSlot(cmd.Env, w.slot)
	cmd.Stdin = inR
	cmd.ExtraFiles = []*os.File{ctlR, startW}
	cmd.Stdout, cmd.Stderr = &w.stdout, &w.stderr
	cmd.WaitDelay = pipeGrace
	w.cmd = cmd
	err = startWithoutCaps(cmd)
	ctlR.Close()
	inR.Close()
	startW.Close()
	if err != nil {
		ctlW.Close()
		inW.Close()
		startR.Close()
		pidSlots.give(w.slot)
		return nil, fmt.Errorf("agent: start a warm init: %w", err)
	}
	go func() {
		w.waitErr = cmd.Wait()
		// Every writer of the start pipe has ended: a byte is there or not.
		var b [1]byte
		n, _ := w.started.Read(b[:])
		w.ran = n == 1
		w.started.Close()
		pidSlots.give(w.slot)
		close(w.exited)
	}()
	return w, nil
}

// discard ends an init no exec will use.
func (w *warmInit) discard() {
	w.ctl.Close()
	w.stdin.Close()
	w.cmd.Process.Kill()
	<-w.exited
}

// errWarmGone says the warm init ended before its command was handed over:
// the exec runs under a cold init instead.
var errWarmGone = errors.New("agent: the warm init ended before its command came")

// run hands req (warmable) to the init and waits for it as runCommand
// does.
func (w *warmInit) run(ctx context.Context, req ExecRequest) (ExecResult, error) {
	select {
	case <-w.exited:
		w.ctl.Close()
		w.stdin.Close()
		return ExecResult{}, errWarmGone
	default:
	}
	var stdout, stderr Output
	outW, errW, liveDone := liveWriters(ctx, &stdout, &stderr)
	defer liveDone()
	w.stdout.set(outW)
	w.stderr.set(errW)

	started := time.Now()
	if _, err := io.WriteString(w.ctl, warmScript(req)); err != nil {
		w.discard()
		return ExecResult{}, errWarmGone
	}
	w.ctl.Close()
	if req.Stdin == "" {
		w.stdin.Close()
	} else {
		go func() {
			io.WriteString(w.stdin, req.Stdin)
			w.stdin.Close()
		}()
	}
	stop := context.AfterFunc(ctx, func() {
		w.cmd.Process.Kill() // the init, by pidfd: the kernel ends its namespace
		select {
		case <-w.exited:
		default:
			syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	<-w.exited
	stop()
	if !w.ran {
		return ExecResult{}, errWarmGone
	}
	return commandResult(ctx, w.cmd, w.waitErr, started, &stdout, &stderr)
}

// shellQuote is s as one single-quoted shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
