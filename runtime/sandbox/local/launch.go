package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// launch starts bwrap blocked before the agent runs, puts the sandbox into
// its cgroups and network, then lets it go and waits for the agent's hello.
func (d *Driver) launch(ctx context.Context, bwrap, releaseRoot, agent string, spec sandbox.Spec, cg *cgroups, disk *workspaceDisk, slots string) (m *Machine, err error) {
	fds := &fdTable{}
	defer fds.close()
	volumeDir := spec.VolumeDir
	uid, gid := d.ids()
	var extra []string
	if slots != "" {
		fd, err := fds.open(slots)
		if err != nil {
			return nil, fmt.Errorf("exec pid slots: %w", err)
		}
		extra = []string{"--bind-fd", fd, execPidsMount}
	}
	skel, err := d.skeletonFor(releaseRoot, spec.Network, agent, spec.VolumeDir != "")
	if err != nil {
		return nil, err
	}
	skel.touch()
	var overlay *rootOverlay
	if d.isImage(spec.Release) {
		if overlay, err = d.mountOverlay(spec.ID, skel, releaseRoot); err != nil {
			return nil, err
		}
		defer func() {
			if m == nil {
				overlay.unmount()
			}
		}()
	}
	spec, unstage, err := d.stageVolume(spec)
	defer unstage() // the sandbox's own mount of the volume outlives the staging one
	if err != nil {
		return nil, err
	}
	args, err := bwrapArgs(fds, skel, releaseRoot, spec, d.cfg.TmpBytes, extra...)
	if err == nil && overlay != nil {
		args, err = imageArgs(args, fds, overlay)
	}
	if err != nil {
		return nil, err
	}
	infoR, blockW, argsFD, err := blockedArgs(fds, args)
	if err != nil {
		return nil, err
	}
	defer infoR.Close()
	defer blockW.Close()

	started, err := d.startBwrap(bwrap, []string{"--args", argsFD, agentPath}, fds, spec.ID, cg)
	fds.close() // the child has its copies; ours would keep pipes open
	if err != nil {
		return nil, err
	}
	if err := d.setUp(ctx, started, infoR, blockW, spec); err != nil {
		started.Stop() // the caller detaches the disk
		return nil, err
	}
	m = started
	m.disk, m.root = disk, overlay
	m.volumeDir, m.volumeUID, m.volumeGID = volumeDir, uid, gid
	return m, nil
}

func (d *Driver) startBwrap(bwrap string, args []string, fds *fdTable, id string, cg *cgroups) (*Machine, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	m := &Machine{id: id, cg: cg, stderr: &tailBuffer{}, exited: make(chan struct{}), pidfd: -1}
	if err := closeInheritedFDs(); err != nil {
		stdinR.Close()
		stdinW.Close()
		stdoutR.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd := exec.Command(bwrap, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, m.stderr
	cmd.ExtraFiles = fds.files
	cmd.Env = []string{}
	// Wait also waits for stderr to be drained, which a sandbox process that
	// outlived bwrap (a start that failed half-way) would hold forever: once
	// bwrap is gone, give its pipes this long, then close them, so Stop
	// cannot hang on it.
	cmd.WaitDelay = 5 * time.Second
	if d.root {
		uid, gid := d.ids()
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	}
	err = cmd.Start()
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("run bwrap: %w", err)
	}
	m.cmd = cmd
	m.client = sandbox.NewAgentClient(stdoutR, stdinW)
	go func() {
		cmd.Wait()
		stdoutR.Close()
		close(m.exited)
	}()
	return m, nil
}

func (d *Driver) setUp(ctx context.Context, m *Machine, infoR, blockW *os.File, spec sandbox.Spec) error {
	pid, err := readChildPID(ctx, infoR)
	if err != nil {
		return fmt.Errorf("bwrap did not start (%s): %w", m.stderr.String(), err)
	}
	m.childPID = pid
	// The sandbox is blocked, so the pid cannot have been reused yet: the
	// pidfd lets Stop kill exactly this process later.
	if m.pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	if err := m.cg.add(pid); err != nil {
		return err
	}
	if spec.Network == sandbox.NetworkAllowlist {
		if err := openDNSPort(pid); err != nil { // egress.go
			return err
		}
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return fmt.Errorf("release the sandbox (%s): %w", m.stderr.String(), err)
	}
	if err := m.client.Ready(ctx); err != nil {
		return fmt.Errorf("agent (%s): %w", m.stderr.String(), err)
	}
	// bwrap reports child-pid before its user namespaces are fully set up;
	// once the agent said hello they are, and no command runs before Start
	// returns, so the network is in place for the first exec.
	if spec.Network == sandbox.NetworkUnrestricted {
		slirp, err := d.startSlirp(ctx, pid)
		if err != nil {
			return err
		}
		m.slirp = slirp
	}
	return nil
}

// closeInheritedFDs marks every descriptor above stderr close-on-exec. The
// server's own files already are, but one it inherited (a pipe its parent
// left open) is not, and would otherwise reach bwrap and every process of
// every sandbox. ExtraFiles are dup'ed into place after this, in the child,
// so what bwrap is meant to get still reaches it.
func closeInheritedFDs() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: mark them one by one.
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("local: close inherited descriptors: %w (close_range: %v)", rerr, err)
	}
	for _, e := range entries {
		if fd, perr := strconv.Atoi(e.Name()); perr == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// readChildPID reads bwrap's --info-fd report: the sandbox's PID 1 as the
// host sees it.
func readChildPID(ctx context.Context, r *os.File) (int, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(15 * time.Second)
	}
	r.SetReadDeadline(deadline)
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("read bwrap info: %w", err)
	}
	if info.ChildPID <= 0 {
		return 0, errors.New("bwrap info has no child-pid")
	}
	return info.ChildPID, nil
}
