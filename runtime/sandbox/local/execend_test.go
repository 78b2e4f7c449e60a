package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// Whatever an exec starts ends with it: a job left in the background, or
// one that left the exec's process group and session with setsid.
func TestProcessesEndWithTheirExec(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	tests := []struct {
		name string
		req  sandbox.ExecRequest
	}{
		{"finished", sandbox.ExecRequest{Command: "setsid sleep 1001 > /dev/null 2>&1 & sleep 1002 > /dev/null 2>&1 & echo started", TimeoutSecs: 30}},
		{"timed out", sandbox.ExecRequest{Command: "setsid sleep 1001 > /dev/null 2>&1 & echo started; exec sleep 1003", TimeoutSecs: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Exec(context.Background(), tc.req)
			if err != nil || res.Stdout != "started\n" {
				t.Fatalf("exec: %+v, %v", res, err)
			}
			if procs := sandboxCommands(t, m); strings.Contains(procs, "sleep 100") {
				t.Errorf("processes of the exec outlived it:\n%s", procs)
			}
		})
	}
	if res := run(t, m, "echo still here"); res.Stdout != "still here\n" {
		t.Errorf("the next exec: %+v", res)
	}
}

// A fork bomb fills the sandbox's pid limit with processes that left its
// session; once its exec ends they are gone, and the next exec runs.
func TestForkBombDoesNotOutliveItsExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the pid limit needs cgroups, so a root server")
	}
	m := start(t, newDriver(t, Config{}), sandbox.Spec{Limits: sandbox.Limits{Pids: 40}})
	bomb, err := m.Exec(context.Background(), sandbox.ExecRequest{
		Command: "for i in $(seq 100); do setsid sleep 1004 > /dev/null 2>&1 & done; wait", TimeoutSecs: 10})
	if err != nil || !strings.Contains(bomb.Stderr, "fork") {
		t.Fatalf("the bomb's exec: %+v, %v; want it to hit the pid limit", bomb, err)
	}
	if procs := sandboxCommands(t, m); strings.Contains(procs, "sleep 1004") {
		t.Errorf("the bomb's processes outlived its exec:\n%s", procs)
	}
	res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "echo a; sh -c 'echo b'", TimeoutSecs: 10})
	if err != nil || res.Stdout != "a\nb\n" || res.ExitCode != 0 {
		t.Errorf("the exec after the bomb: %+v, %v", res, err)
	}
}

// The agent holds CAP_SYS_ADMIN in the sandbox's user namespace to make each
// exec's pid namespace; nothing it starts may hold or regain any capability.
func TestCommandsHoldNoCapabilities(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	res := run(t, m, "grep ^Cap /proc/self/status; sh -c 'grep ^Cap /proc/self/status'")
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 10 {
		t.Fatalf("capability lines: %q", res.Stdout)
	}
	for _, line := range lines {
		if !strings.HasSuffix(line, "\t0000000000000000") {
			t.Errorf("a command holds a capability: %s", line)
		}
	}
}

// The pid limit applies per exec: while one exec holds every process its
// limit allows (and takes any that frees up), another exec of the same
// sandbox still starts.
func TestForkBombLeavesRoomForAConcurrentExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the pid limit needs cgroups, so a root server")
	}
	ws := workspace(t)
	m := start(t, newDriver(t, Config{}), sandbox.Spec{WorkspaceDir: ws, Limits: sandbox.Limits{Pids: 40}})
	bomb := `python3 -c '
import os, time
n, told = 0, False
while True:
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
    except OSError:
        if not told:
            open("filled", "w").write(str(n))
            told = True'`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Exec(ctx, sandbox.ExecRequest{Command: bomb, TimeoutSecs: 120})
	}()
	var filled []byte
	waitFor(t, func() bool {
		filled, _ = os.ReadFile(filepath.Join(ws, "filled"))
		return len(filled) > 0
	})
	if n, _ := strconv.Atoi(string(filled)); n == 0 || n >= 40 {
		t.Errorf("the bomb started %d processes, want it stopped under its limit of 40", n)
	}
	res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "sh -c 'echo a child runs'", TimeoutSecs: 30})
	if err != nil || res.Stdout != "a child runs\n" {
		t.Fatalf("an exec beside the bomb: %+v, %v", res, err)
	}
	cancel()
	<-done
}

// A fork bomb's exec that ends just before its timeout leaves the kernel
// ending a thousand processes past it: the exec still answers, timed out,
// instead of failing with the deadline. (How long the kernel takes varies,
// so this reproduces the failure often, not every run.)
func TestBombEndingAtItsTimeoutStillAnswers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the pid limit needs cgroups, so a root server")
	}
	m := start(t, newDriver(t, Config{}), sandbox.Spec{Limits: sandbox.Limits{Pids: 1024}})
	// How long the kernel takes to end the bomb varies: these end at
	// several points before the timeout, so one ends inside that window.
	for _, sleep := range []string{"1.5", "1.6", "1.7", "1.8", "1.9", "1.95"} {
		res, err := m.Exec(context.Background(), sandbox.ExecRequest{
			Command: "b() { b | b & }; b 2> /dev/null; sleep " + sleep + "; echo slept", TimeoutSecs: 2})
		// The bomb may also leave sleep no pid (exit 2): a result all the same.
		if err != nil {
			t.Fatalf("the bomb's exec (sleep %s) failed: %v, %+v; want a result", sleep, err, res)
		}
	}
	if res := run(t, m, "echo after"); res.Stdout != "after\n" {
		t.Errorf("the exec after the bomb: %+v", res)
	}
}
