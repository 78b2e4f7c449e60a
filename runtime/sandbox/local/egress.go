package local

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// egressArgs bind the sandbox's network exit (spec.EgressDir: the host
// proxy's socket and the certificates) read-only at sandbox.EgressDir and
// tell the agent its mode. An allowlist sandbox has no network but its own
// loopback (like "none"); its agent answers DNS on 127.0.0.1:53.
func egressArgs(fds *fdTable, spec sandbox.Spec) ([]string, error) {
	if spec.EgressDir == "" {
		if spec.Network == sandbox.NetworkAllowlist {
			return nil, fmt.Errorf("local: an allowlist sandbox needs its network exit (EgressDir)")
		}
		return nil, nil
	}
	fd, err := fds.open(spec.EgressDir)
	if err != nil {
		return nil, fmt.Errorf("network exit: %w", err)
	}
	mode := sandbox.EgressInternet
	if spec.Network == sandbox.NetworkAllowlist {
		mode = sandbox.EgressAllowlist
	}
	return []string{"--ro-bind-fd", fd, sandbox.EgressDir, "--setenv", sandbox.EgressEnv, mode}, nil
}

// openDNSPort lets the agent of an allowlist sandbox bind 127.0.0.1:53.
// Its network namespace belongs to bwrap's outer user namespace, over which
// the agent holds no capability, so the host lowers the namespace's first
// privileged port to 53 (net.ipv4.ip_unprivileged_port_start, a setting of
// that namespace only) before the sandbox is released. Needs a root server.
func openDNSPort(pid int) error {
	errc := make(chan error, 1)
	go func() {
		// The thread enters the sandbox's namespace and is never handed
		// back: it ends with this goroutine.
		runtime.LockOSThread()
		ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter the sandbox's network namespace (allowlist networks need a root server): %w", err)
			return
		}
		errc <- os.WriteFile("/proc/sys/net/ipv4/ip_unprivileged_port_start", []byte("53"), 0)
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("local: open port 53 to the sandbox's agent: %w", err)
	}
	return nil
}
