package runtime

import (
	"github.com/subako/subako/runtime/egress"

	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/subako/subako/runtime/sandbox"
)

// slirpVirtual are slirp4netns's gateway and DNS: never blocked, whatever
// the host's own addresses are.
var slirpVirtual = []string{"10.0.2.2", "10.0.2.3"}

// egressDriver closes the gap slirp4netns leaves in Internet mode: it has
// no egress filter, so a sandbox could reach the host's own addresses and
// the networks around it. Before a machine runs anything, "prohibit" routes
// in its network namespace refuse those destinations (a connect fails at
// once), leaving the default route to the Internet. The sandbox holds no
// capability over its namespace, so it cannot remove them.
//
// It needs a root server (to enter the sandbox's namespace) and a machine
// that names its host pid; others start as before, with a warning.
type egressDriver struct {
	sandbox.Driver
	log      *slog.Logger
	warnOnce sync.Once
	// rt, exits and rootCAs serve the machines' network exits
	// (sandboxes_exit.go): allowlist and Internet modes.
	rt       *Runtime
	exits    *exitLog
	rootCAs  *x509.CertPool
	resolver *net.Resolver
}

// RecoverWorkspace passes sandbox.WorkspaceRecoverer through to the driver.
func (d *egressDriver) RecoverWorkspace(dir string) error {
	if r, ok := d.Driver.(sandbox.WorkspaceRecoverer); ok {
		return r.RecoverWorkspace(dir)
	}
	return nil
}

func (d *egressDriver) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Machine, error) {
	var exit *sandboxExit
	if d.wantsExit(ctx, spec) {
		var err error
		if exit, err = d.openExit(ctx, spec); err != nil {
			return nil, err
		}
		spec.EgressDir = exit.dir
	}
	m, err := d.startFiltered(ctx, spec)
	if err != nil {
		exit.close()
		return m, err
	}
	if exit != nil {
		return &exitMachine{Machine: m, exit: exit}, nil
	}
	return m, nil
}

func (d *egressDriver) startFiltered(ctx context.Context, spec sandbox.Spec) (sandbox.Machine, error) {
	m, err := d.Driver.Start(ctx, spec)
	if err != nil || spec.Network != sandbox.NetworkUnrestricted {
		return m, err
	}
	hp, ok := m.(interface{ HostPID() int })
	if !ok || os.Geteuid() != 0 {
		d.warnOnce.Do(func() {
			d.log.Warn("sandbox: Internet sandboxes can reach this host's own addresses and private networks: " +
				"the egress filter needs a root server and the local driver")
		})
		return m, nil
	}
	if err := blockPrivateRoutes(ctx, hp.HostPID()); err != nil {
		m.Stop()
		return nil, fmt.Errorf("sandbox %s: install the egress filter (needs nsenter and ip: apt-get install util-linux iproute2): %w", spec.ID, err)
	}
	return m, nil
}

// blockPrivateRoutes adds the prohibit routes in pid's network namespace.
func blockPrivateRoutes(ctx context.Context, pid int) error {
	var batch strings.Builder
	// The same ranges the server's own egress refuses (runtime/egress); the
	// slirp network 10.0.2.0/24 is a longer prefix, so it stays reachable.
	var cidrs []string
	for _, p := range egress.PrivateIPv4() {
		cidrs = append(cidrs, p.String())
	}
	for _, cidr := range append(cidrs, hostAddresses()...) {
		batch.WriteString("route add prohibit " + cidr + "\n")
	}
	cmd := exec.CommandContext(ctx, "nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "--", "ip", "-batch", "-")
	cmd.Stdin = strings.NewReader(batch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hostAddresses are this host's own IPv4 addresses as /32s, read at each
// start so a changed address is covered. Without them a sandbox could reach
// a host service listening on a public address through slirp4netns.
func hostAddresses() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.IP.IsLoopback() {
			continue
		}
		ip := ipn.IP.To4().String()
		if seen[ip] || ip == slirpVirtual[0] || ip == slirpVirtual[1] {
			continue
		}
		seen[ip] = true
		out = append(out, ip+"/32")
	}
	return out
}
