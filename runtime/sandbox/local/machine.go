package local

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// Machine is one running bwrap sandbox. The server is bwrap's direct parent
// and holds a pidfd on the sandbox's PID 1, so Stop kills the whole sandbox
// even if bwrap itself misbehaves.
type Machine struct {
	id       string
	cmd      *exec.Cmd
	childPID int
	pidfd    int
	client   *sandbox.AgentClient
	slirp    *exec.Cmd
	cg       *cgroups
	disk     *workspaceDisk
	root     *rootOverlay // the writable root of an image release, or nil
	stderr   *tailBuffer
	exited   chan struct{}
	// volumeDir is the session's volume bound at /volume (or ""), given
	// to the sandbox's host user before each exec.
	volumeDir            string
	volumeUID, volumeGID int

	stopOnce sync.Once
	stopErr  error
}

// HostPID is the sandbox's PID 1 as the host sees it.
func (m *Machine) HostPID() int { return m.childPID }

// Exec implements sandbox.Machine.
func (m *Machine) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	m.giveVolume()
	oomBefore := m.cg.oomKills()
	res, err := m.client.Exec(ctx, req)
	m.noteOOM(&res, oomBefore)
	if errors.Is(err, sandbox.ErrMachineExited) {
		return res, fmt.Errorf("%w (%s)", err, m.stderr.String())
	}
	return res, err
}

// Done is closed once every process of the machine is gone.
func (m *Machine) Done() <-chan struct{} { return m.exited }

// Stop implements sandbox.Machine: it kills the sandbox's PID 1, which takes
// every process in its pid namespace with it, then cleans up.
func (m *Machine) Stop() error {
	m.stopOnce.Do(func() { m.stopErr = m.stop() })
	return m.stopErr
}

func (m *Machine) stop() error {
	if m.pidfd >= 0 {
		if err := unix.PidfdSendSignal(m.pidfd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			m.cmd.Process.Kill()
		}
		unix.Close(m.pidfd)
	} else if m.cmd != nil {
		m.cmd.Process.Kill()
	}
	m.client.Close()
	select {
	case <-m.exited:
	case <-time.After(5 * time.Second):
		m.cmd.Process.Kill()
		<-m.exited
	}
	if m.slirp != nil {
		m.slirp.Process.Kill()
		m.slirp.Wait()
	}
	// Every process is gone: the workspace disk's content goes back into
	// a plain folder, which is what the lifecycle archives.
	err := errors.Join(m.cg.remove(), m.disk.detach(), m.root.unmount())
	if err != nil {
		return fmt.Errorf("local: stop %s: %w", m.id, err)
	}
	return nil
}

// tailBuffer keeps the last bytes bwrap and the agent wrote to stderr, for
// error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailKeep = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailKeep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailKeep:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) == 0 {
		return "no output from bwrap"
	}
	return string(t.buf)
}
