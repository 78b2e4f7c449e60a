package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

func execJob(t *testing.T, m *Machine, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	res, err := m.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("exec %+v: %v", req, err)
	}
	return res
}

// A background exec answers at once with its job id and first output; the
// job outlives that exec, its output and status are read by a later exec,
// and kill_job ends it with everything it started.
func TestBackgroundJobOutlivesItsExec(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	started := execJob(t, m, sandbox.ExecRequest{Command: "echo up; sleep 1005 & sleep 1006; echo never", Background: true})
	if started.Job == "" || started.JobStatus != sandbox.JobRunning || started.Stdout != "up\n" {
		t.Fatalf("the background exec answered %+v; want a running job that printed up", started)
	}
	if started.DurationMs > 5000 {
		t.Fatalf("the background exec took %d ms; want about its first second", started.DurationMs)
	}
	if procs := sandboxCommands(t, m); !strings.Contains(procs, "sleep 1005") || !strings.Contains(procs, "sleep 1006") {
		t.Fatalf("the job's processes ended with its exec:\n%s", procs)
	}
	read := execJob(t, m, sandbox.ExecRequest{Job: started.Job})
	if read.JobStatus != sandbox.JobRunning || read.Stdout != "up\n" || read.Job != started.Job {
		t.Fatalf("reading the job: %+v", read)
	}
	killed := execJob(t, m, sandbox.ExecRequest{KillJob: started.Job})
	if killed.JobStatus != sandbox.JobKilled || killed.ExitCode != 128+9 {
		t.Fatalf("kill_job answered %+v; want killed, exit 137", killed)
	}
	waitFor(t, func() bool { return !strings.Contains(sandboxCommands(t, m), "sleep 100") })

	// A job that ends keeps its exit code and output for a later read.
	ended := execJob(t, m, sandbox.ExecRequest{Command: "echo done; echo oops >&2; exit 3", Background: true})
	if ended.JobStatus != sandbox.JobExited || ended.ExitCode != 3 || ended.Stdout != "done\n" || ended.Stderr != "oops\n" {
		t.Fatalf("a job that ended within its first second: %+v", ended)
	}
	if again := execJob(t, m, sandbox.ExecRequest{Job: ended.Job}); again.ExitCode != 3 || again.Stdout != "done\n" {
		t.Fatalf("reading the ended job: %+v", again)
	}

	// A job's output is kept like an exec's: its first and last 32 KiB.
	chatty := execJob(t, m, sandbox.ExecRequest{Command: "echo first; head -c 1000000 /dev/zero | tr '\\0' x; echo; echo last", Background: true})
	waitFor(t, func() bool {
		return execJob(t, m, sandbox.ExecRequest{Job: chatty.Job}).JobStatus == sandbox.JobExited
	})
	out := execJob(t, m, sandbox.ExecRequest{Job: chatty.Job})
	if !out.StdoutTruncated || out.StdoutBytes != 1000012 || !strings.HasPrefix(out.Stdout, "first\n") || !strings.HasSuffix(out.Stdout, "last\n") || len(out.Stdout) > sandbox.MaxOutputBytes {
		t.Fatalf("a chatty job's output: %d bytes kept of %d, truncated %v", len(out.Stdout), out.StdoutBytes, out.StdoutTruncated)
	}

	var fe *sandbox.FieldError
	if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Job: "job_nothere"}); !errors.As(err, &fe) || fe.Field != "job" || !strings.Contains(fe.Message, "suspends") {
		t.Fatalf("reading an unknown job: %v", err)
	}
	if _, err := m.Exec(context.Background(), sandbox.ExecRequest{Job: started.Job, Command: "ls"}); !errors.As(err, &fe) || fe.Field != "job" {
		t.Fatalf("a job read with a command: %v", err)
	}
}

// At most four background jobs run at once; a fifth is refused naming the
// limit and the running jobs, and starts once one is killed.
func TestFifthBackgroundJobRefused(t *testing.T) {
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	var ids []string
	for i := range sandbox.MaxJobs {
		res := execJob(t, m, sandbox.ExecRequest{Command: "sleep 100" + strconv.Itoa(i), Background: true})
		ids = append(ids, res.Job)
	}
	_, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "sleep 1009", Background: true})
	var fe *sandbox.FieldError
	if !errors.As(err, &fe) || fe.Field != "background" || !strings.Contains(fe.Message, "the limit is 4") || !strings.Contains(fe.Message, ids[0]) {
		t.Fatalf("the fifth job: %v; want refused naming the limit of 4 and the jobs", err)
	}
	// Other execs still run meanwhile.
	if res := run(t, m, "echo beside"); res.Stdout != "beside\n" {
		t.Fatalf("an exec beside four jobs: %+v", res)
	}
	execJob(t, m, sandbox.ExecRequest{KillJob: ids[0]})
	if res := execJob(t, m, sandbox.ExecRequest{Command: "sleep 1009", Background: true}); res.JobStatus != sandbox.JobRunning {
		t.Fatalf("a job after one was killed: %+v", res)
	}
}

// A fork bomb started in the background fills its own pid slot: the
// sandbox's other execs still start, and killing the job frees the slot.
func TestBackgroundForkBombStaysInItsSlot(t *testing.T) {
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
            time.sleep(600)
            os._exit(0)
        n += 1
    except OSError:
        if not told:
            open("filled", "w").write(str(n))
            told = True'`
	job := execJob(t, m, sandbox.ExecRequest{Command: bomb, Background: true})
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
		t.Fatalf("an exec beside the background bomb: %+v, %v", res, err)
	}
	if k := execJob(t, m, sandbox.ExecRequest{KillJob: job.Job}); k.JobStatus != sandbox.JobKilled {
		t.Fatalf("kill_job of the bomb: %+v", k)
	}
	waitFor(t, func() bool { return !strings.Contains(sandboxCommands(t, m), "python3") })
}
