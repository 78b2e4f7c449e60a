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
//
// The thread that enters the namespace comes back to the host's before it
// is handed back to the Go runtime, and is never let end: bwrap and
// slirp4netns die with the thread that started them (--die-with-parent,
// Pdeathsig), so a thread ending here could take another sandbox with it.
func openDNSPort(pid int) error {
	host, err := os.Open("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("local: open port 53 to the sandbox's agent: %w", err)
	}
	defer host.Close()
	ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return fmt.Errorf("local: open port 53 to the sandbox's agent: %w", err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter the sandbox's network namespace (allowlist networks need a root server): %w", err)
			return
		}
		err := os.WriteFile("/proc/sys/net/ipv4/ip_unprivileged_port_start", []byte("53"), 0)
		if back := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); back != nil {
			// The thread stays in the sandbox's namespace: it may run
			// nothing else, and must not end either. Park it.
			errc <- err
			select {}
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("local: open port 53 to the sandbox's agent: %w", err)
	}
	return nil
}
