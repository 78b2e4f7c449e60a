package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// execInit is the first process of one exec's own pid namespace: a shell
// that joins the exec's pid slot, if any, then runs the command in a second
// shell and exits with its status. When it exits, the kernel kills every
// process left in the namespace, so whatever the exec started, even with
// setsid or a double fork, ends with it. The command does not run as the
// namespace's PID 1, so it gets signals as anywhere else (kill $$ works);
// while it waits, the init reaps what is orphaned. A shell, not the agent's
// own binary: a big Go binary takes about 12 ms to start, a shell 1 ms.
//
// The init's own messages ("Terminated" when the command dies of a signal)
// go to /dev/null; the command gets the exec's stderr back through fd 3, in
// a subshell (dash applies a simple command's redirections in the parent,
// and would print its message on them).
const execInit = `exec 3>&2 2>/dev/null
if [ -n "$` + execSlotEnv + `" ]; then echo 0 > "$` + execSlotEnv + `/cgroup.procs"; fi
unset ` + execSlotEnv + `
(exec /bin/sh -c "$1" 2>&3 3>&-)
exit $?`

// execInitCommand is the command line that runs `sh -c command` under
// execInit in a new pid namespace, or plain `sh -c` in a new process group
// when the agent may not make namespaces (newPID false).
func execInitCommand(ctx context.Context, command string, newPID bool) *exec.Cmd {
	if !newPID {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", execInit, "subako-exec", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID}
	return cmd
}

// withSlot names the exec's pid slot (a cgroup folder) for execInit.
func withSlot(env []string, slot string) []string {
	if slot == "" {
		return env
	}
	return append(env, execSlotEnv+"="+slot)
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
