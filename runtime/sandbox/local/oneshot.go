package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// OneShot is one command in a fresh bubblewrap sandbox that is gone when the
// command ends: the function engine's native packages run this way. Unlike a
// machine it has no agent, no disk and no skeleton: the host's /usr (and its
// merged-/usr links) read-only as the root, a generated /etc, a sized /tmp,
// no network at all (not even a slirp), and only the binds given.
type OneShot struct {
	Bwrap string // default: bwrap found on PATH
	// UID and GID the sandbox runs as on the host when the server is root
	// (default 65534): bwrap started as root maps the sandbox's user to root.
	UID, GID   int
	CgroupRoot string // default /sys/fs/cgroup
	Command    []string
	Env        []string // KEY=VALUE, the whole environment
	Binds      []OneShotBind
	// Files appear read-only at their guest paths (from memory: nothing is
	// written on the host).
	Files    map[string][]byte
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
	Limits   sandbox.Limits // memory, process count (and CPU on cgroups)
	TmpBytes int64          // size of /tmp (default 64 MiB)
	Timeout  time.Duration  // the whole sandbox is killed past it
	// MaxFileBytes, when set, is RLIMIT_FSIZE: no process inside can make
	// a file larger (a write past it fails with EFBIG).
	MaxFileBytes int64
}

// OneShotBind is a host folder or file seen inside at Guest.
type OneShotBind struct {
	Host, Guest string
	Write       bool
}

// OneShotResult is how the command ended.
type OneShotResult struct {
	ExitCode int
	// Killed says why the sandbox was stopped: "" (it ended), "deadline",
	// "cancelled" (the caller gave up) or "memory" (the kernel's OOM killer in
	// its cgroup).
	Killed string
	// LimitsBy names what enforced the limits: "cgroup v1", "cgroup v2" or
	// "rlimit" (RLIMIT_AS for memory, RLIMIT_NPROC for processes) when the
	// cgroup tree cannot be written.
	LimitsBy string
	Duration time.Duration
}

// Killed reasons.
const (
	KilledDeadline  = "deadline"
	KilledCancelled = "cancelled"
	KilledMemory    = "memory"
)

// RunOneShot runs o and returns once the sandbox and every process in it are
// gone: the sandbox's PID 1 is killed by pidfd at the deadline (which kills
// its whole pid namespace), and its cgroup is removed after.
func RunOneShot(ctx context.Context, o OneShot) (OneShotResult, error) {
	o.defaults()
	var res OneShotResult
	fds := &fdTable{}
	defer fds.close()
	binds, unstage, err := o.stage()
	defer unstage()
	if err != nil {
		return res, err
	}
	args, err := o.args(fds, binds)
	if err != nil {
		return res, err
	}
	infoR, blockW, argsFD, err := blockedArgs(fds, args)
	if err != nil {
		return res, err
	}
	defer infoR.Close()
	defer blockW.Close()
	if err := closeInheritedFDs(); err != nil {
		return res, err
	}
	// Limits are decided before the start: rlimits where cgroups cannot
	// be written go on the command line of util-linux's prlimit inside
	// (a prlimit(2) from here is refused once the sandbox has its own user
	// namespace), and are inherited by everything the command starts.
	cg, rlimits, err := o.limits(&res)
	defer cg.remove()
	if err != nil {
		return res, err
	}
	stderr := &tailBuffer{}
	cmd := exec.Command(o.Bwrap, append(append([]string{"--args", argsFD}, rlimits...), o.Command...)...)
	cmd.Stdin, cmd.Stdout = o.Stdin, o.Stdout
	cmd.Stderr = io.MultiWriter(o.Stderr, stderr)
	cmd.ExtraFiles = fds.files
	cmd.Env = []string{}
	cmd.WaitDelay = 2 * time.Second
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID), Groups: []uint32{}}}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("local: run bwrap: %w", err)
	}
	fds.close() // the child has its copies
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() { _ = cmd.Process.Kill(); <-done }

	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	pid, err := readChildPID(rctx, infoR)
	cancel()
	if err != nil {
		stop()
		return res, fmt.Errorf("local: bwrap did not start (%s): %w", strings.TrimSpace(stderr.String()), err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		stop()
		return res, fmt.Errorf("local: pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	if err := cg.add(pid); err != nil {
		stop()
		return res, err
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		stop()
		return res, fmt.Errorf("local: release the sandbox (%s): %w", stderr.String(), err)
	}

	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer.C:
		res.Killed = KilledDeadline
	case <-ctx.Done():
		res.Killed = KilledCancelled
	}
	if res.Killed != "" {
		// PID 1 of the sandbox's pid namespace: the kernel kills every
		// process in it with it.
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		waitErr = <-done
	}
	res.Duration = time.Since(start)
	if res.Killed == "" && cg.oomKills() > 0 {
		res.Killed = KilledMemory
	}
	var exit *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exit):
		res.ExitCode = exit.ExitCode()
	case errors.Is(waitErr, exec.ErrWaitDelay):
	default:
		return res, fmt.Errorf("local: wait for bwrap: %w", waitErr)
	}
	return res, nil
}

func (o *OneShot) defaults() {
	if o.Bwrap == "" {
		o.Bwrap = "bwrap"
		if p, err := exec.LookPath("bwrap"); err == nil {
			o.Bwrap = p
		}
	}
	if o.UID == 0 {
		o.UID = 65534
	}
	if o.GID == 0 {
		o.GID = 65534
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.TmpBytes <= 0 {
		o.TmpBytes = 64 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Stdin == nil {
		o.Stdin = bytes.NewReader(nil)
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
}

// args builds the sandbox: the same user, /etc and release files a
// machine gets (etcFiles, releaseEtc), without its agent or workspace.
func (o *OneShot) args(fds *fdTable, binds []OneShotBind) ([]string, error) {
	args := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--uid", insideUID, "--gid", insideGID, "--hostname", hostname,
		"--clearenv",
	}
	for _, kv := range o.Env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--ro-bind", "/usr", "/usr")
	for _, top := range releaseTop {
		p := "/" + top
		if target, err := os.Readlink(p); err == nil {
			args = append(args, "--symlink", target, p)
		} else if st, err := os.Stat(p); err == nil && st.IsDir() {
			args = append(args, "--ro-bind", p, p)
		}
	}
	args = append(args, "--dir", "/etc")
	for name, content := range etcFiles(sandbox.NetworkNone) {
		fd, err := fds.blob(name, content)
		if err != nil {
			return nil, err
		}
		args = append(args, "--ro-bind-data", fd, "/etc/"+name)
	}
	for _, name := range releaseEtc {
		if _, err := os.Stat(filepath.Join("/etc", name)); err == nil {
			args = append(args, "--ro-bind", filepath.Join("/etc", name), filepath.Join("/etc", name))
		}
	}
	size := strconv.FormatInt(o.TmpBytes, 10)
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp")
	for _, b := range binds {
		flag := "--ro-bind"
		if b.Write {
			flag = "--bind"
		}
		args = append(args, flag, b.Host, b.Guest)
	}
	for guest, content := range o.Files {
		fd, err := fds.blob(filepath.Base(guest), string(content))
		if err != nil {
			return nil, err
		}
		args = append(args, "--ro-bind-data", fd, guest)
	}
	// The root is bwrap's tmpfs: read-only once everything is mounted.
	return append(args, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"), nil
}

// stage makes the binds reachable by path for bwrap running as the sandbox's
// uid. bwrap 0.8 resolves even a --bind-fd source with realpath(3), which
// needs search permission on every folder above it, and the data folder may
// sit under one only root can enter: so a root server bind-mounts each
// source onto a fresh folder of a private staging folder under the temporary
// folder (owned by the sandbox's uid), for the run's length only. A server
// that is not root runs bwrap as itself, which reaches its own folders.
func (o *OneShot) stage() ([]OneShotBind, func(), error) {
	if os.Geteuid() != 0 || len(o.Binds) == 0 {
		return o.Binds, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "subako-oneshot-")
	if err != nil {
		return nil, func() {}, err
	}
	var mounted []string
	undo := func() {
		for _, m := range mounted {
			_ = unix.Unmount(m, unix.MNT_DETACH)
			_ = os.Remove(m) // never RemoveAll: a mount that stayed would lose its files
		}
		_ = os.Remove(dir)
	}
	if err := os.Chown(dir, o.UID, o.GID); err != nil {
		return nil, undo, err
	}
	out := make([]OneShotBind, len(o.Binds))
	for i, b := range o.Binds {
		st, err := os.Stat(b.Host)
		if err != nil {
			return nil, undo, fmt.Errorf("local: bind %s: %w", b.Guest, err)
		}
		target := filepath.Join(dir, strconv.Itoa(i))
		if st.IsDir() {
			err = os.Mkdir(target, 0o700)
		} else {
			err = os.WriteFile(target, nil, 0o600)
		}
		if err != nil {
			return nil, undo, err
		}
		if err := unix.Mount(b.Host, target, "", unix.MS_BIND, ""); err != nil {
			_ = os.Remove(target)
			return nil, undo, fmt.Errorf("local: stage %s for bwrap: %w", b.Guest, err)
		}
		mounted = append(mounted, target)
		_ = unix.Mount("", target, "", unix.MS_PRIVATE, "")
		out[i] = OneShotBind{Host: target, Guest: b.Guest, Write: b.Write}
	}
	return out, undo, nil
}

// CleanOneShots removes what one-shot sandboxes of a server that died left
// in the temporary folder: staging folders (their bind mounts detached
// first, and only emptied folders removed: never a mount's files) and
// broker folders named by prefix (a socket, nothing else). Only folders
// older than olderThan are touched: another server on the machine may be
// running a call with its own right now.
func CleanOneShots(brokerPrefix string, olderThan time.Duration) {
	tmp := os.TempDir()
	ents, _ := os.ReadDir(tmp)
	for _, ent := range ents {
		name := ent.Name()
		info, err := ent.Info()
		switch {
		case err != nil || !ent.IsDir() || time.Since(info.ModTime()) < olderThan:
		case strings.HasPrefix(name, "subako-oneshot-"):
			dir := filepath.Join(tmp, name)
			subs, _ := os.ReadDir(dir)
			for _, sub := range subs {
				p := filepath.Join(dir, sub.Name())
				_ = unix.Unmount(p, unix.MNT_DETACH)
				_ = os.Remove(p)
			}
			_ = os.Remove(dir)
		case brokerPrefix != "" && strings.HasPrefix(name, brokerPrefix):
			_ = os.RemoveAll(filepath.Join(tmp, name))
		}
	}
}

// blockedArgs adds bwrap's --info-fd (it reports the sandbox's PID 1 there)
// and --block-fd (it waits there before running the command) to args, and
// writes the whole command line to a memfd for --args: bwrap is the
// sandbox's PID 1, and /proc/1/cmdline would show every command in the
// sandbox the host's mounts. The caller reads infoR and writes blockW.
func blockedArgs(fds *fdTable, args []string) (infoR, blockW *os.File, argsFD string, err error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, nil, "", err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoR.Close()
		infoW.Close()
		return nil, nil, "", err
	}
	args = append(args, "--info-fd", fds.add(infoW), "--block-fd", fds.add(blockR))
	var opts strings.Builder
	for _, a := range args {
		opts.WriteString(a)
		opts.WriteByte(0)
	}
	if argsFD, err = fds.blob("bwrap-args", opts.String()); err != nil {
		infoR.Close()
		blockW.Close()
		return nil, nil, "", err
	}
	return infoR, blockW, argsFD, nil
}

// prlimitPath is util-linux's prlimit, in every Debian release's /usr.
const prlimitPath = "/usr/bin/prlimit"

// limits makes the sandbox's cgroup, or, where the cgroup tree cannot be
// written, the prlimit prefix for RLIMIT_AS and RLIMIT_NPROC (NPROC counts
// the host uid's processes, not only this sandbox's). RLIMIT_FSIZE, when
// asked, is set either way.
func (o *OneShot) limits(res *OneShotResult) (*cgroups, []string, error) {
	var rl []string
	if o.MaxFileBytes > 0 {
		rl = append(rl, fmt.Sprintf("--fsize=%d:%d", o.MaxFileBytes, o.MaxFileBytes))
	}
	var cg *cgroups
	if o.Limits != (sandbox.Limits{}) {
		var err error
		cg, err = newCgroups(o.CgroupRoot, "fn-"+randomID(), o.Limits)
		switch {
		case err == nil:
			res.LimitsBy = "cgroup v1"
			if isV2(o.CgroupRoot) {
				res.LimitsBy = "cgroup v2"
			}
		case errors.Is(err, errCgroupsUnavailable):
			res.LimitsBy = "rlimit"
			if o.Limits.MemoryBytes > 0 {
				rl = append(rl, fmt.Sprintf("--as=%d:%d", o.Limits.MemoryBytes, o.Limits.MemoryBytes))
			}
			if o.Limits.Pids > 0 {
				rl = append(rl, fmt.Sprintf("--nproc=%d:%d", o.Limits.Pids, o.Limits.Pids))
			}
		default:
			return nil, nil, err
		}
	}
	if len(rl) == 0 {
		return cg, nil, nil
	}
	return cg, append(append([]string{prlimitPath}, rl...), "--"), nil
}

// oomKills counts processes the kernel's OOM killer ended in the cgroup:
// memory.oom_control's oom_kill on v1, memory.events' on v2.
func (c *cgroups) oomKills() int {
	if c == nil {
		return 0
	}
	// Only the memory controller's folder counts them; without a memory
	// limit there is none.
	if c.oomFile == "" {
		return 0
	}
	var buf [512]byte
	b := buf[:]
	if n, ok, err := c.oom.read(b); ok && err == nil && n < len(b) {
		b = b[:n]
	} else if b, err = readCgroupFile(c.oomFile); err != nil { // not held, or longer than expected
		return 0
	}
	kills := 0
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			k, _ := strconv.Atoi(strings.TrimSpace(v))
			kills += k
		}
	}
	return kills
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
