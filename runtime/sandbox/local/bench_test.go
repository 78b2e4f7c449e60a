package local

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// BenchmarkColdStart is a sandbox's first exec: start bwrap and the agent,
// run `true`, stop.
func BenchmarkColdStart(b *testing.B) {
	d := newDriver(b, Config{})
	ws := workspace(b)
	for b.Loop() {
		m, err := d.Start(context.Background(), sandbox.Spec{ID: "bench", Release: "2026", Network: sandbox.NetworkNone, WorkspaceDir: ws})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
		m.Stop()
	}
}

// BenchmarkColdStartDisk is BenchmarkColdStart with a 2 GiB workspace
// disk: make and mount the image at start, copy it back at stop.
func BenchmarkColdStartDisk(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("workspace disks need root")
	}
	d := newDriver(b, Config{DiskBytes: 2 << 30})
	ws := workspace(b)
	for b.Loop() {
		m, err := d.Start(context.Background(), sandbox.Spec{ID: "bench", Release: "2026", Network: sandbox.NetworkNone, WorkspaceDir: ws})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
		if err := m.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkColdStartInternet adds slirp4netns.
func BenchmarkColdStartInternet(b *testing.B) {
	d := newDriver(b, Config{})
	ws := workspace(b)
	for b.Loop() {
		m, err := d.Start(context.Background(), sandbox.Spec{ID: "bench", Release: "2026", Network: sandbox.NetworkUnrestricted, WorkspaceDir: ws})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
		m.Stop()
	}
}

// BenchmarkBareBwrapTrue is the floor: bwrap with the same namespaces and a
// read-only /usr running `true`, as in NOTES.md.
func BenchmarkBareBwrapTrue(b *testing.B) {
	ws := workspace(b)
	uid, gid := newDriver(b, Config{}).ids()
	for b.Loop() {
		cmd := exec.Command("bwrap", "--unshare-all", "--die-with-parent", "--new-session",
			"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
			"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
			"--bind", ws, "/workspace", "--chdir", "/workspace", "sh", "-c", "true")
		if uid != syscall.Getuid() {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkWarmExecTrue is every later exec: one round trip to the agent,
// which forks `sh -c true`.
func BenchmarkWarmExecTrue(b *testing.B) {
	m := start(b, newDriver(b, Config{}), sandbox.Spec{})
	for b.Loop() {
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
	}
}
