package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// The issue 11 benchmarks run Subako and its baseline in the same loop,
// alternating, and report the ratio of their mean times ("x-bare"), so a
// machine busy with other work slows both alike.

// bareBwrap is the floor of a cold start: bwrap with the same namespaces, a
// read-only /usr and a bound workspace running `sh -c true` (NOTES.md).
func bareBwrap(b *testing.B, ws string, uid, gid int) func() {
	return func() {
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

// alternate runs subako and base in turn b.N times each and reports both
// means and their ratio.
func alternate(b *testing.B, subako, base func()) {
	var ts, tb time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		subako()
		t1 := time.Now()
		base()
		ts += t1.Sub(t0)
		tb += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(n)/1000, "ms-subako")
	b.ReportMetric(float64(tb.Microseconds())/float64(n)/1000, "ms-bare")
	b.ReportMetric(float64(ts)/float64(tb), "x-bare")
}

// productionAgent builds cmd/subako-agent as `make build` ships it next to
// the server (CGO_ENABLED=0), so a cold start is measured with it.
// SUBAKO_BENCH_AGENT names another agent instead (the subako binary, as
// servers used before subako-agent).
func productionAgent(b *testing.B) string {
	if p := os.Getenv("SUBAKO_BENCH_AGENT"); p != "" {
		return p
	}
	out := filepath.Join(b.TempDir(), "subako-agent")
	build := exec.Command("go", "build", "-o", out, "github.com/subako/subako/cmd/subako-agent")
	// Static, as the Makefile builds it: with cgo the agent is linked
	// against libc and its every start runs the dynamic loader.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the agent: %v: %s", err, msg)
	}
	return out
}

func coldStart(b *testing.B, d *Driver, ws string) func() {
	return func() {
		m, err := d.Start(context.Background(), sandbox.Spec{ID: "bench", Release: "2026", Network: sandbox.NetworkNone, WorkspaceDir: ws,
			Limits: sandbox.Limits{MemoryBytes: 512 << 20, Pids: 256, CPUPercent: 100}})
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

// BenchmarkHotColdStartVsBare is a sandbox's first exec (start with the
// default limits, exec `true`, stop) against bare bwrap.
func BenchmarkHotColdStartVsBare(b *testing.B) {
	d := newDriver(b, Config{AgentPath: productionAgent(b)})
	ws := workspace(b)
	uid, gid := d.ids()
	alternate(b, coldStart(b, d, ws), bareBwrap(b, workspace(b), uid, gid))
}

// BenchmarkHotColdStartDiskVsBare adds a 2 GiB workspace disk, as
// --sandbox-disk does.
func BenchmarkHotColdStartDiskVsBare(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("workspace disks need root")
	}
	d := newDriver(b, Config{DiskBytes: 2 << 30, AgentPath: productionAgent(b)})
	ws := workspace(b)
	uid, gid := d.ids()
	alternate(b, coldStart(b, d, ws), bareBwrap(b, workspace(b), uid, gid))
}

// BenchmarkHotFirstExecVsBare is what a user waits for at a sandbox's first
// exec: start with the default limits and exec `true`, against bare bwrap.
// The stop comes later in a server (when the sandbox idles) and is left out
// of the time here, not out of the loop: it runs before the baseline's turn.
func BenchmarkHotFirstExecVsBare(b *testing.B) {
	firstExecVsBare(b, 0)
}

// BenchmarkHotFirstExecAfterPauseVsBare is the same after a pause before
// each side, as a session's first exec comes in a server: not right after
// another machine's start and stop. It shows what a quiet kernel makes a
// cold start wait for: the move into the machine's cgroups waits for an
// RCU grace period unless one ran just before or the cgroups are mounted
// with favordynmods (cgroup_dynmods.go).
func BenchmarkHotFirstExecAfterPauseVsBare(b *testing.B) {
	firstExecVsBare(b, SettlePause)
}

func firstExecVsBare(b *testing.B, pause time.Duration) {
	d := newDriver(b, Config{AgentPath: productionAgent(b)})
	ws := workspace(b)
	uid, gid := d.ids()
	bare := bareBwrap(b, workspace(b), uid, gid)
	var ts, tb time.Duration
	n := 0
	for b.Loop() {
		time.Sleep(pause)
		t0 := time.Now()
		m, err := d.Start(context.Background(), sandbox.Spec{ID: "bench", Release: "2026", Network: sandbox.NetworkNone, WorkspaceDir: ws,
			Limits: sandbox.Limits{MemoryBytes: 512 << 20, Pids: 256, CPUPercent: 100}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "true"}); err != nil {
			b.Fatal(err)
		}
		ts += time.Since(t0)
		if err := m.Stop(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(pause)
		t1 := time.Now()
		bare()
		tb += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(n)/1000, "ms-subako")
	b.ReportMetric(float64(tb.Microseconds())/float64(n)/1000, "ms-bare")
	b.ReportMetric(float64(ts)/float64(tb), "x-bare")
}

// BenchmarkHotWarmExecVsSh is a later exec of `true` in a running machine
// against the host running `sh -c true`. Each call starts after a pause
// (not timed), as a model's calls come: the agent prepares the next exec's
// init after answering, and that work must not land on the baseline's
// time (nor the baseline's leftovers on Subako's).
func BenchmarkHotWarmExecVsSh(b *testing.B) {
	execVsSh(b, sandbox.ExecRequest{Command: "true"})
}

// BenchmarkHotExecCwdEnvVsSh is BenchmarkHotWarmExecVsSh for an exec that
// names its folder and a variable, as agents' execs often do, against the
// host's `sh -c true` in that folder with that variable.
func BenchmarkHotExecCwdEnvVsSh(b *testing.B) {
	execVsSh(b, sandbox.ExecRequest{Command: "true", Cwd: "/tmp", Env: map[string]string{"BENCH_VAR": "1"}})
}

// execVsSh alternates req in a running machine with the host's `sh -c`
// of the same command, in its folder with its variables.
func execVsSh(b *testing.B, req sandbox.ExecRequest) {
	m := start(b, newDriver(b, Config{}), sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 512 << 20, Pids: 256, CPUPercent: 100}})
	env := os.Environ()
	for name, value := range req.Env {
		env = append(env, name+"="+value)
	}
	alternateSettled(b, func() {
		if _, err := m.Exec(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}, func() {
		cmd := exec.Command("/bin/sh", "-c", req.Command)
		cmd.Dir, cmd.Env = req.Cwd, env
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	})
}

// SettlePause is the pause alternateSettled makes before each call: long
// enough, on this loaded machine, for the work a call leaves behind (the
// agent's next init) to end before the other side is timed.
const SettlePause = 50 * time.Millisecond

// alternateSettled is alternate with a pause, not timed, before each call.
func alternateSettled(b *testing.B, subako, base func()) {
	var ts, tb time.Duration
	n := 0
	for b.Loop() {
		time.Sleep(SettlePause)
		t0 := time.Now()
		subako()
		ts += time.Since(t0)
		time.Sleep(SettlePause)
		t1 := time.Now()
		base()
		tb += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(n)/1000, "ms-subako")
	b.ReportMetric(float64(tb.Microseconds())/float64(n)/1000, "ms-bare")
	b.ReportMetric(float64(ts)/float64(tb), "x-bare")
}
