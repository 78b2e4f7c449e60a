package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// startSlirp connects the sandbox's own network namespace to the Internet
// through slirp4netns, a user-space network stack. Host loopback is disabled,
// so services on the host's 127.0.0.1 stay out of reach.
func (d *Driver) startSlirp(ctx context.Context, childPID int) (*exec.Cmd, error) {
	slirp, err := lookPath(d.cfg.Slirp4netns, "slirp4netns", "slirp4netns")
	if err != nil {
		return nil, err
	}
	// The sandbox's netns belongs to a user namespace bwrap created; slirp
	// must join that one (not bwrap's nested inner one) to configure it.
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", childPID))
	if err != nil {
		return nil, fmt.Errorf("slirp4netns: %w", err)
	}
	defer netns.Close()
	usernsFD, err := unix.IoctlRetInt(int(netns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return nil, fmt.Errorf("slirp4netns: owner of the sandbox netns: %w", err)
	}
	userns := os.NewFile(uintptr(usernsFD), "userns")
	defer userns.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	args := []string{"--configure", "--mtu", "65520", "--disable-host-loopback", "--userns-path", "/proc/self/fd/3", "--ready-fd", "4"}
	// A root server runs slirp4netns as root joined to the sandbox's user
	// namespace: it holds no capability over the host, and --enable-sandbox
	// then locks it in an empty root with a seccomp filter. Started by an
	// unprivileged server, slirp4netns 1.2's sandbox joins bwrap's inner user
	// namespace and fails (setegid(0)), so it runs without it.
	if d.root {
		args = append(args, "--enable-sandbox", "--enable-seccomp")
	}
	cmd := exec.Command(slirp, append(args, strconv.Itoa(childPID), "tap0")...)
	cmd.ExtraFiles = []*os.File{userns, readyW}
	// A server killed outright must not leave slirp4netns behind, holding a
	// namespace nobody will clean up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr := &tailBuffer{}
	cmd.Stderr = stderr
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return nil, fmt.Errorf("slirp4netns: %w", err)
	}
	if err := waitReady(ctx, readyR); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("slirp4netns did not get ready (%s): %w", stderr.String(), err)
	}
	return cmd, nil
}

func waitReady(ctx context.Context, r *os.File) error {
	if deadline, ok := ctx.Deadline(); ok {
		r.SetReadDeadline(deadline)
	}
	var b [1]byte
	if _, err := r.Read(b[:]); err != nil {
		return err
	}
	if b[0] != '1' {
		return fmt.Errorf("ready-fd said %q", b[0])
	}
	return nil
}
