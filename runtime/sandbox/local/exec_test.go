package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

func TestExecRunsCommandsWithTheirInput(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	tests := []struct {
		name       string
		req        sandbox.ExecRequest
		wantOut    string
		wantErrOut string
		wantCode   int
	}{
		{"pipes and &&", sandbox.ExecRequest{Command: "printf 'b\\na\\n' | sort && echo done"}, "a\nb\ndone\n", "", 0},
		{"exit code and stderr", sandbox.ExecRequest{Command: "echo oops >&2; exit 7"}, "", "oops\n", 7},
		{"stdin", sandbox.ExecRequest{Command: "tr a-z A-Z", Stdin: "hello"}, "HELLO", "", 0},
		{"env", sandbox.ExecRequest{Command: `echo "$GREETING $HOME"`, Env: map[string]string{"GREETING": "hi"}}, "hi /workspace\n", "", 0},
		{"default cwd", sandbox.ExecRequest{Command: "pwd"}, "/workspace\n", "", 0},
		{"cwd", sandbox.ExecRequest{Command: "pwd", Cwd: "/tmp"}, "/tmp\n", "", 0},
		{"agent variable hidden", sandbox.ExecRequest{Command: "echo ${" + sandbox.AgentEnv + ":-unset}"}, "unset\n", "", 0},
		{"killed by a signal", sandbox.ExecRequest{Command: "kill -TERM $$"}, "", "", 128 + 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Exec(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stdout != tc.wantOut || res.Stderr != tc.wantErrOut || res.ExitCode != tc.wantCode {
				t.Errorf("got stdout %q stderr %q exit %d; want %q %q %d", res.Stdout, res.Stderr, res.ExitCode, tc.wantOut, tc.wantErrOut, tc.wantCode)
			}
		})
	}
}

func TestExecRefusesBadInputNamingTheField(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	tests := []struct {
		req   sandbox.ExecRequest
		field string
	}{
		{sandbox.ExecRequest{Command: ""}, "command"},
		{sandbox.ExecRequest{Command: strings.Repeat("x", sandbox.MaxCommandChars+1)}, "command"},
		{sandbox.ExecRequest{Command: "cat", Stdin: strings.Repeat("x", sandbox.MaxStdinBytes+1)}, "stdin"},
		{sandbox.ExecRequest{Command: "true", TimeoutSecs: sandbox.MaxTimeoutSecs + 1}, "timeout_secs"},
		{sandbox.ExecRequest{Command: "true", Cwd: "relative"}, "cwd"},
		{sandbox.ExecRequest{Command: "true", Cwd: "/no/such/folder"}, "cwd"},
		{sandbox.ExecRequest{Command: "true", Env: map[string]string{"1BAD": "x"}}, "env.1BAD"},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			_, err := m.Exec(context.Background(), tc.req)
			var fe *sandbox.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("error = %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}

func TestExecKeepsHeadAndTailOfLongOutput(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	var want strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	res := run(t, m, "seq 1 100000; seq 1 100000 >&2")
	for _, s := range []struct {
		name      string
		text      string
		bytes     int64
		truncated bool
	}{{"stdout", res.Stdout, res.StdoutBytes, res.StdoutTruncated}, {"stderr", res.Stderr, res.StderrBytes, res.StderrTruncated}} {
		if !s.truncated || s.bytes != int64(want.Len()) {
			t.Errorf("%s: truncated %v, bytes %d; want true, %d", s.name, s.truncated, s.bytes, want.Len())
		}
		if len(s.text) > sandbox.MaxOutputBytes {
			t.Errorf("%s: kept %d bytes, over the %d limit", s.name, len(s.text), sandbox.MaxOutputBytes)
		}
		if !strings.HasPrefix(s.text, "1\n2\n3\n") || !strings.HasSuffix(s.text, "99999\n100000\n") || !strings.Contains(s.text, "bytes omitted") {
			t.Errorf("%s: does not keep head, marker and tail: %q ... %q", s.name, s.text[:20], s.text[len(s.text)-20:])
		}
	}
}

func TestTimeoutKillsBackgroundChildrenAndKeepsOutput(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	res, err := m.Exec(context.Background(), sandbox.ExecRequest{
		Command:     "sleep 100 & echo started; while true; do echo tick; sleep 0.1; done",
		TimeoutSecs: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != sandbox.TimeoutExitCode {
		t.Errorf("timed_out %v exit %d; want true, %d", res.TimedOut, res.ExitCode, sandbox.TimeoutExitCode)
	}
	if !strings.HasPrefix(res.Stdout, "started\ntick\n") {
		t.Errorf("stdout = %q, want what was printed before the deadline", res.Stdout)
	}
	if procs := sandboxCommands(t, m); strings.Contains(procs, "sleep 100") {
		t.Errorf("the background sleep survived the timeout; processes:\n%s", procs)
	}
}

// sandboxCommands lists the command lines of every process in the sandbox,
// read from the host.
func sandboxCommands(t *testing.T, m *Machine) string {
	var b strings.Builder
	for _, pid := range descendants(m.HostPID()) {
		b.WriteString(cmdline(pid) + "\n")
	}
	return b.String()
}

func TestConcurrentExecsInOneSandbox(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	run(t, m, "mkfifo /tmp/ping /tmp/pong")
	// Each command blocks until the other runs: serialised execs would hang
	// until their timeout.
	cmds := []string{"cat /tmp/ping; echo a > /tmp/pong", "echo b > /tmp/ping; cat /tmp/pong"}
	want := []string{"b\n", "a\n"}
	var wg sync.WaitGroup
	results := make([]sandbox.ExecResult, len(cmds))
	errs := make([]error, len(cmds))
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = m.Exec(context.Background(), sandbox.ExecRequest{Command: c, TimeoutSecs: 10})
		}()
	}
	wg.Wait()
	for i := range cmds {
		if errs[i] != nil || results[i].TimedOut || results[i].Stdout != want[i] {
			t.Errorf("exec %d: %+v, %v; want stdout %q", i, results[i], errs[i], want[i])
		}
	}
}

func TestCancelledExecIsKilled(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Exec(ctx, sandbox.ExecRequest{Command: "echo go; exec sleep 100"})
		done <- err
	}()
	waitFor(t, func() bool { return strings.Contains(sandboxCommands(t, m), "sleep 100") })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	waitFor(t, func() bool { return !strings.Contains(sandboxCommands(t, m), "sleep 100") })
}
