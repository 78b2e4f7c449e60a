package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// execInitEnv marks the agent's executable started as the first process of
// one exec's own pid namespace. When that process exits, the kernel kills
// every process left in the namespace: whatever an exec started, even with
// setsid or a double fork, ends with it.
const execInitEnv = "SUBAKO_EXEC_INIT"

// runExecInitIfRequested is the exec's init: it runs `sh -c` with the
// arguments it was given, reaps every orphan of the namespace while it
// waits, and exits with the shell's status (128+N for a signal N, which an
// init cannot die of). Never returns when it is the init.
func runExecInitIfRequested() {
	if os.Getenv(execInitEnv) != "1" {
		return
	}
	os.Unsetenv(execInitEnv)
	if slot := os.Getenv(execSlotEnv); slot != "" {
		os.Unsetenv(execSlotEnv)
		// Before the command starts, so all it forks counts in the slot. A
		// slot that cannot be joined leaves the machine's own limit.
		_ = os.WriteFile(filepath.Join(slot, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
	}
	sh := exec.Command("/bin/sh", os.Args[1:]...)
	sh.Stdin, sh.Stdout, sh.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := sh.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "subako exec:", err)
		os.Exit(127)
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			os.Exit(127) // no child left: cannot happen while sh runs
		}
		if pid != sh.Process.Pid {
			continue // an orphan reparented to this init
		}
		if ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ws.ExitStatus())
	}
}

// execInitCommand is the command line that runs `sh -c command` as the init
// of a new pid namespace, or plain `sh -c` in a new process group when the
// agent may not make namespaces (newPID false).
func execInitCommand(ctx context.Context, command string, newPID bool) *exec.Cmd {
	if !newPID {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	// /proc/self/exe is the agent inside a sandbox (and the test binary in
	// this package's tests, whose TestMain runs RunAgentIfRequested).
	cmd := exec.CommandContext(ctx, "/proc/self/exe", "-c", command)
	cmd.Args[0] = "subako-exec"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID}
	return cmd
}

// withInitEnv adds the marker that makes the agent's executable an exec
// init, and the pid slot (a cgroup folder) the init joins, if any.
func withInitEnv(env []string, slot string) []string {
	env = append(env, execInitEnv+"=1")
	if slot != "" {
		env = append(env, execSlotEnv+"="+slot)
	}
	return env
}

// ExecPidsDir is where a driver may bind the machine's per-exec pid
// slots: cgroup folders e0, e1… whose pids.max bounds one exec each.
const ExecPidsDir = "/.subako/pids"

// execSlotEnv names the slot an exec's init joins.
const execSlotEnv = "SUBAKO_EXEC_SLOT"

// pidSlots hands each exec the least used slot, so execs running at once
// get separate ones while there are enough.
var pidSlots slotPool

type slotPool struct {
	once  sync.Once
	mu    sync.Mutex
	slots []string
	users map[string]int
}

func (p *slotPool) take() string {
	p.once.Do(func() {
		p.slots, _ = filepath.Glob(filepath.Join(ExecPidsDir, "e[0-9]*"))
		p.users = map[string]int{}
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	best := ""
	for _, s := range p.slots {
		if best == "" || p.users[s] < p.users[best] {
			best = s
		}
	}
	if best != "" {
		p.users[best]++
	}
	return best
}

func (p *slotPool) give(slot string) {
	if slot == "" {
		return
	}
	p.mu.Lock()
	p.users[slot]--
	p.mu.Unlock()
}

// canNewPID reports whether this process may make pid namespaces: the local
// driver grants the agent CAP_SYS_ADMIN inside the sandbox's own user
// namespace for that alone.
func canNewPID() bool {
	var data [2]unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

// dropInheritableCaps makes sure nothing started from the calling thread can
// gain a capability: bwrap hands the agent its capabilities as ambient ones,
// which a command would otherwise keep across execve. Capabilities are per
// thread, so the caller forks from this same thread. The agent itself keeps CAP_SYS_ADMIN (permitted and effective) for
// the next exec's namespace.
func dropInheritableCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	// The bounding set caps what a file capability could grant a command.
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
	var data [2]unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}

// startWithoutCaps starts cmd from a thread whose capabilities were
// dropped. That thread is never handed back to the Go scheduler (it ends
// with its goroutine): an agent run in-process as host root, as in tests,
// would otherwise start later programs without root's capabilities.
func startWithoutCaps(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		if err := dropInheritableCaps(); err != nil {
			errc <- err
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
