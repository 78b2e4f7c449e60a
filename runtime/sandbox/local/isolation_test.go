package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// hostServer listens on the host's 127.0.0.1 and proves it answers there.
func hostServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "host secret") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port))
	if err != nil {
		t.Fatalf("the host server does not answer on the host itself: %v", err)
	}
	resp.Body.Close()
	return port
}

func TestNoInternetHasOnlyLoopbackAndCannotReachHost(t *testing.T) {
	port := hostServer(t)
	m := start(t, newDriver(t, Config{}), sandbox.Spec{Network: sandbox.NetworkNone})
	res := run(t, m, fmt.Sprintf("curl -sS -m 3 http://127.0.0.1:%d/", port))
	if res.ExitCode == 0 || strings.Contains(res.Stdout, "host secret") {
		t.Errorf("the host's 127.0.0.1:%d answered from inside: %+v", port, res)
	}
	links := run(t, m, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
	if links.Stdout != "lo\n" {
		t.Errorf("network interfaces = %q, want only lo", links.Stdout)
	}
}

func TestInternetModeGetsARouteButNotHostLoopback(t *testing.T) {
	port := hostServer(t)
	m := start(t, newDriver(t, Config{}), sandbox.Spec{Network: sandbox.NetworkUnrestricted})
	route := run(t, m, "cat /proc/net/route")
	if !strings.Contains(route.Stdout, "tap0\t00000000\t0202000A") {
		t.Errorf("no default route via 10.0.2.2 on tap0:\n%s", route.Stdout)
	}
	addr := run(t, m, "ip -4 -o addr show tap0")
	if !strings.Contains(addr.Stdout, "10.0.2.100/24") {
		t.Errorf("tap0 address: %q", addr.Stdout)
	}
	for _, host := range []string{"127.0.0.1", "10.0.2.2"} {
		res := run(t, m, fmt.Sprintf("curl -sS -m 3 http://%s:%d/", host, port))
		if res.ExitCode == 0 || strings.Contains(res.Stdout, "host secret") {
			t.Errorf("the host's loopback server answered at %s: %+v", host, res)
		}
	}
	if resolv := run(t, m, "cat /etc/resolv.conf"); resolv.Stdout != "nameserver 10.0.2.3\n" {
		t.Errorf("resolv.conf = %q", resolv.Stdout)
	}
}

func TestOnlyWorkspaceAndTmpAreWritable(t *testing.T) {
	skill := reachableDir(t, "skill")
	os.WriteFile(filepath.Join(skill, "hello.sh"), []byte("echo hello from skill\n"), 0o644)
	m := start(t, newDriver(t, Config{}), sandbox.Spec{Skills: map[string]string{"demo": skill}})
	tests := []struct {
		path     string
		writable bool
	}{
		{"/workspace/f", true}, {"/tmp/f", true}, {"/dev/shm/f", true},
		{"/f", false}, {"/usr/f", false}, {"/usr/bin/f", false}, {"/etc/f", false}, {"/etc/passwd", false},
		{"/.subako/f", false}, {"/.subako/agent", false}, {"/skills/demo/f", false}, {"/skills/demo/hello.sh", false}, {"/dev/f", false},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res := run(t, m, "echo x >> "+tc.path)
			if (res.ExitCode == 0) != tc.writable {
				t.Errorf("writing %s: exit %d (%s); want writable=%v", tc.path, res.ExitCode, res.Stderr, tc.writable)
			}
		})
	}
	if res := run(t, m, "sh /skills/demo/hello.sh"); res.Stdout != "hello from skill\n" {
		t.Errorf("skill script: %+v", res)
	}
}

func TestEtcIsGeneratedNotTheHosts(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	res := run(t, m, "ls /etc/shadow /etc/hostname.host 2>&1; cut -d: -f1 /etc/passwd | tr '\\n' ' '; awk 'BEGIN{print \"awk works\"}'")
	if !strings.Contains(res.Stdout, "'/etc/shadow': No such file") || !strings.Contains(res.Stdout, "root sandbox nobody ") {
		t.Errorf("/etc looks like the host's: %q", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "awk works") {
		t.Errorf("/etc/alternatives links missing: %q", res.Stdout)
	}
	// Nor does any process's command line show how the host is laid out.
	res = run(t, m, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
	if strings.Contains(res.Stdout, "alternatives") || strings.Contains(res.Stdout, "--ro-bind") {
		t.Errorf("a command line inside shows the sandbox's mounts: %.300q", res.Stdout)
	}
}

func TestSandboxNeverRunsAsHostRoot(t *testing.T) {
	d := newDriver(t, Config{})
	m := start(t, d, sandbox.Spec{})
	if res := run(t, m, "id -u"); res.Stdout != insideUID+"\n" {
		t.Errorf("id -u inside = %q, want %s", res.Stdout, insideUID)
	}
	go m.Exec(context.Background(), sandbox.ExecRequest{Command: "exec sleep 30", TimeoutSecs: 30})
	waitFor(t, func() bool { return strings.Contains(sandboxCommands(t, m), "sleep 30") })
	wantUID, _ := d.ids()
	for _, pid := range descendants(m.HostPID()) {
		for _, uid := range hostUIDs(t, pid) {
			if uid == "0" || uid != strconv.Itoa(wantUID) {
				t.Errorf("pid %d (%s) runs as host uid %s, want %d", pid, cmdline(pid), uid, wantUID)
			}
		}
	}
}

func TestStopKillsEveryProcess(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	go m.Exec(context.Background(), sandbox.ExecRequest{Command: "sleep 100 & sleep 100", TimeoutSecs: 300})
	waitFor(t, func() bool {
		n := 0
		for _, line := range strings.Split(sandboxCommands(t, m), "\n") {
			if line == "sleep 100" {
				n++
			}
		}
		return n == 2
	})
	pids := descendants(m.HostPID())
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("pid %d (%s) survived Stop", pid, cmdline(pid))
		}
	}
	if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err == nil {
		t.Error("exec on a stopped machine succeeded")
	}
}

func TestMissingBubblewrapSaysHowToInstall(t *testing.T) {
	d := newDriver(t, Config{Bwrap: "/nonexistent/bwrap"})
	_, err := d.Start(context.Background(), sandbox.Spec{ID: "x", Release: "2026", Network: "none", WorkspaceDir: workspace(t)})
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("error = %v, want it to say apt-get install bubblewrap", err)
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	d := newDriver(t, Config{})
	ws := workspace(t)
	private := t.TempDir()
	os.Chmod(private, 0o700)
	hidden := filepath.Join(private, "ws")
	os.Mkdir(hidden, 0o755)
	tests := []struct {
		name string
		spec sandbox.Spec
		want string
	}{
		{"bad id", sandbox.Spec{ID: "../x", Release: "2026", Network: "none", WorkspaceDir: ws}, `id "../x"`},
		{"unknown release", sandbox.Spec{ID: "x", Release: "1999", Network: "none", WorkspaceDir: ws}, `release "1999"`},
		{"host network", sandbox.Spec{ID: "x", Release: "2026", Network: "host", WorkspaceDir: ws}, `network "host"`},
		{"bad skill", sandbox.Spec{ID: "x", Release: "2026", Network: "none", WorkspaceDir: ws, Skills: map[string]string{"../up": ws}}, `skill name "../up"`},
		{"unreachable workspace", sandbox.Spec{ID: "x", Release: "2026", Network: "none", WorkspaceDir: hidden}, "not reachable by the sandbox uid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if os.Geteuid() != 0 && tc.name == "unreachable workspace" {
				t.Skip("only a root server runs sandboxes as another uid")
			}
			if _, err := d.Start(context.Background(), tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %s", err, tc.want)
			}
		})
	}
}
