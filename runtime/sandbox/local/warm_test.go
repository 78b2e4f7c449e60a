package local

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// An exec that takes a warm init (issue 11: the agent starts one as it says
// hello, and the next after each exec) sees what one under a fresh init
// sees: the same environment, folder, $$ and parent, descriptors, stdin,
// and the same signals and exit codes.
func TestWarmExecSeesWhatAColdOneSees(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	// An exec setting a SUBAKO_ variable always runs under a cold init; the
	// probe leaves its variable out of what it prints.
	const probe = `env | grep -v '^SUBAKO_PROBE=' | sort; echo "pid=$$ ppid=$PPID"; pwd; ls /proc/self/fd | tr '\n' ' '; echo; readlink /proc/self/fd/0; echo "stdin=$(cat)"
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done | grep -c 'subako_[c]ommand' >&2`
	probeIn := func(cwd string, env map[string]string) (string, bool) {
		res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: probe, Cwd: cwd, Env: env, TimeoutSecs: 30})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 && res.ExitCode != 1 {
			t.Fatalf("probe: %+v", res)
		}
		return res.Stdout, strings.TrimSpace(res.Stderr) == "1" // its own init is a warm one
	}
	probeRun := func(env map[string]string) (string, bool) { return probeIn("", env) }
	// probeWarm probes until an exec takes a warm init (the next one
	// starts after each answer), failing with why if none does.
	probeWarm := func(why, cwd string, env map[string]string) string {
		for range 50 {
			time.Sleep(100 * time.Millisecond)
			if got, warm := probeIn(cwd, env); warm {
				return got
			}
		}
		t.Fatal(why)
		return ""
	}
	first, warm := probeRun(nil)
	if !warm {
		t.Fatal("the first exec of a machine did not take the init the agent started at its hello")
	}
	cold, warm := probeRun(map[string]string{"SUBAKO_PROBE": "cold"})
	if warm {
		t.Fatal("an exec with variables of its own ran under a warm init")
	}
	if first != cold {
		t.Errorf("a warm exec sees\n%s\na cold one\n%s", first, cold)
	}
	if got := probeWarm("no later exec took a warm init", "", nil); got != cold {
		t.Errorf("a later warm exec sees\n%s\na cold one\n%s", got, cold)
	}

	// An exec with a folder and variables of its own takes a warm init too,
	// and sees what a cold one sees: the folder resolved as the kernel
	// resolves a cold init's (through a symlink), no OLDPWD, its variables
	// as given whatever they hold, one of them overriding the base's.
	if res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "mkdir -p /tmp/real && ln -sfn /tmp/real /workspace/link"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("make the folders: %+v %v", res, err)
	}
	vars := map[string]string{"PROBE_QUOTED": "it's \"a\"\n b $HOME `id` \\ ; exit 3", "HOME": "/tmp", "PROBE_EMPTY": ""}
	got := probeWarm("an exec with a folder and variables of its own never took a warm init", "/workspace/link", vars)
	coldVars := map[string]string{"SUBAKO_PROBE": "cold"}
	for k, v := range vars {
		coldVars[k] = v
	}
	coldIn, warm := probeIn("/workspace/link", coldVars)
	if warm {
		t.Fatal("an exec setting a SUBAKO_ variable ran under a warm init")
	}
	if got != coldIn {
		t.Errorf("a warm exec in a folder with variables sees\n%s\na cold one\n%s", got, coldIn)
	}
	// (env prints PROBE_QUOTED on two lines, which sort puts apart)
	for _, want := range []string{"\n/tmp/real\n", "PROBE_QUOTED=it's \"a\"\n", " b $HOME `id` \\ ; exit 3\n", "HOME=/tmp\n", "PROBE_EMPTY=\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the exec's probe lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "OLDPWD") {
		t.Errorf("a warm exec in a folder of its own sees an OLDPWD:\n%s", got)
	}
	// Variables up to the limit in all (1 MiB) reach the command through a
	// warm init as through a cold one.
	big := map[string]string{}
	for i := range sandbox.MaxEnvBytes / (sandbox.MaxEnvValueBytes + 8) {
		big[fmt.Sprintf("PROBE_BIG%d", i)] = strings.Repeat("x", sandbox.MaxEnvValueBytes)
	}
	bigProbe := sandbox.ExecRequest{Command: `env | grep -c '^PROBE_BIG[0-9]*=x*$'; echo "$$ $PPID"
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done | grep -c 'subako_[c]ommand' >&2`, Env: big}
	time.Sleep(200 * time.Millisecond)
	warmBig, err := m.Exec(context.Background(), bigProbe)
	big["SUBAKO_PROBE"] = "cold"
	coldBig, cerr := m.Exec(context.Background(), bigProbe)
	if err != nil || cerr != nil || warmBig.Stdout != fmt.Sprintf("%d\n2 1\n", len(big)-1) || warmBig.Stdout != coldBig.Stdout {
		t.Errorf("1 MiB of variables: warm %+v %v, cold %+v %v", warmBig.Stdout, err, coldBig.Stdout, cerr)
	}
	// (a cold exec sees no init of its own with the command's variable, but
	// may see the next warm init waiting: its init and subshell)
	if warmBig.Stderr != "1\n" || coldBig.Stderr == "1\n" {
		t.Errorf("1 MiB of variables: want the first exec under a warm init and the second under a cold one, their probes say %q and %q", warmBig.Stderr, coldBig.Stderr)
	}

	// A folder the command may not enter: the warm init gives way to a
	// cold one, which reports it as a cold exec always did.
	if res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "mkdir -p /tmp/shut && chmod 000 /tmp/shut"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("make the folder: %+v %v", res, err)
	}
	time.Sleep(200 * time.Millisecond)
	_, warmErr := m.Exec(context.Background(), sandbox.ExecRequest{Command: "echo ran", Cwd: "/tmp/shut"})
	_, coldErr := m.Exec(context.Background(), sandbox.ExecRequest{Command: "echo ran", Cwd: "/tmp/shut", Env: map[string]string{"SUBAKO_PROBE": "cold"}})
	if warmErr == nil || coldErr == nil || warmErr.Error() != coldErr.Error() {
		t.Errorf("an exec in a folder it may not enter: %v, where a cold one gives %v", warmErr, coldErr)
	}

	// Signals, exit codes, stdin, a timeout and background processes, taken
	// by warm inits (each exec after the first finds one, given the time).
	cases := []struct {
		req  sandbox.ExecRequest
		want func(sandbox.ExecResult) bool
	}{
		{sandbox.ExecRequest{Command: "kill $$; echo not killed"}, func(r sandbox.ExecResult) bool { return r.ExitCode == 143 && r.Stdout == "" }},
		{sandbox.ExecRequest{Command: "exit 7"}, func(r sandbox.ExecResult) bool { return r.ExitCode == 7 }},
		{sandbox.ExecRequest{Command: "echo out; echo err >&2"}, func(r sandbox.ExecResult) bool { return r.Stdout == "out\n" && r.Stderr == "err\n" }},
		{sandbox.ExecRequest{Command: "tr a-z A-Z", Stdin: "it's 'quoted'\n"}, func(r sandbox.ExecResult) bool { return r.Stdout == "IT'S 'QUOTED'\n" }},
		{sandbox.ExecRequest{Command: "printf '%s\\n' \"it's\" '$HOME' \"a\nb\""}, func(r sandbox.ExecResult) bool { return r.Stdout == "it's\n$HOME\na\nb\n" }},
		{sandbox.ExecRequest{Command: "sleep 30", TimeoutSecs: 1}, func(r sandbox.ExecResult) bool { return r.TimedOut && r.ExitCode == sandbox.TimeoutExitCode }},
		{sandbox.ExecRequest{Command: "(sleep 300 &); setsid sleep 301 & echo started"}, func(r sandbox.ExecResult) bool { return r.Stdout == "started\n" }},
	}
	for _, c := range cases {
		time.Sleep(200 * time.Millisecond) // the next warm init starts after the answer
		res, err := m.Exec(context.Background(), c.req)
		if err != nil {
			t.Fatalf("%q: %v", c.req.Command, err)
		}
		if !c.want(res) {
			t.Errorf("%q: %+v", c.req.Command, res)
		}
	}
	if ps := sandboxCommands(t, m); strings.Contains(ps, "sleep 30") {
		t.Errorf("an exec's processes outlived it:\n%s", ps)
	}

	// A waiting init whose subshell, or itself, was killed is not used: the
	// exec runs its command once, under a cold init.
	for _, which := range []string{"subshell", "init"} {
		var pids []int
		waitFor(t, func() bool {
			pids = pids[:0]
			for _, pid := range descendants(m.HostPID()) {
				if strings.Contains(cmdline(pid), "subako_command") {
					pids = append(pids, pid)
				}
			}
			return len(pids) == 2
		})
		victim := pids[1] // the subshell: the init's child, listed after it
		if which == "init" {
			victim = pids[0]
		}
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "echo ran >> /tmp/runs; cat /tmp/runs | wc -l"})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("after the warm %s was killed: %+v %v", which, res, err)
		}
		if want := map[string]string{"subshell": "1\n", "init": "2\n"}[which]; res.Stdout != want {
			t.Errorf("after the warm %s was killed the command ran %q times, want %q", which, res.Stdout, want)
		}
	}
}
