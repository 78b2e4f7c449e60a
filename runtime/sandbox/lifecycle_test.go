package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

func TestSuspendRestoreRetireKeepOnlyTheWorkspace(t *testing.T) {
	events := make(chan sandbox.Record, 16)
	e := newEnv(t, func(c *sandbox.Config) {
		c.OnChange = func(rec sandbox.Record) {
			select {
			case events <- rec:
			default:
				t.Errorf("more state changes than expected: %s", rec.State)
			}
		}
	})
	e.exec("echo hi > notes.txt; echo scratch > /tmp/outside")
	rec := e.wantState(sandbox.StateRunning)

	e.tick(sandbox.DefaultIdleTimeout - time.Second)
	e.wantState(sandbox.StateRunning)
	e.tick(time.Second)
	rec = e.wantState(sandbox.StateSuspended)
	if got := e.archived(rec.ID)["notes.txt"]; got != "hi\n" {
		t.Fatalf("archive has notes.txt = %q", got)
	}
	if rec.MachineSeconds != 300 || rec.ArchiveBytes == 0 {
		t.Errorf("machine_seconds %v archive_bytes %d; want 300 (idle minutes included) and > 0", rec.MachineSeconds, rec.ArchiveBytes)
	}
	wantUsage := []sandbox.UsageEvent{
		{SandboxID: rec.ID, SessionID: "ses1", Kind: sandbox.UsageMachineSeconds, Quantity: 300, At: rec.SuspendedAt},
		{SandboxID: rec.ID, SessionID: "ses1", Kind: sandbox.UsageArchiveBytes, Quantity: float64(rec.ArchiveBytes), At: rec.SuspendedAt},
	}
	if e.usage[0] != wantUsage[0] || e.usage[1] != wantUsage[1] {
		t.Errorf("usage = %+v, want %+v", e.usage, wantUsage)
	}
	if a, b := <-events, <-events; a.State != sandbox.StateRunning || b.State != sandbox.StateSuspended {
		t.Errorf("subscriber saw %s then %s, want running then suspended", a.State, b.State)
	}

	res := e.exec("cat notes.txt; cat /tmp/outside")
	if res.Stdout != "hi\n" || !strings.Contains(res.Stderr, "No such file") {
		t.Errorf("after restore: stdout %q stderr %q; want the workspace back and /tmp empty", res.Stdout, res.Stderr)
	}
	e.wantState(sandbox.StateRunning)

	e.tick(sandbox.DefaultIdleTimeout)
	e.tick(sandbox.DefaultRetireAfter - time.Second)
	e.wantState(sandbox.StateSuspended)
	e.tick(time.Second)
	rec = e.wantState(sandbox.StateRetired)
	if _, err := os.Stat(filepath.Join(e.cfg.Dir, rec.ID)); !os.IsNotExist(err) {
		t.Errorf("retired sandbox's folder still exists: %v", err)
	}
	if res := e.exec("cat notes.txt"); res.Stdout != "hi\n" {
		t.Errorf("after retirement: %q, want notes.txt from the archive", res.Stdout)
	}
	if rec := e.wantState(sandbox.StateRunning); rec.MachineSeconds != 600 || !rec.RetiredAt.IsZero() {
		t.Errorf("machine_seconds %v retired_at %v; want 600 and cleared", rec.MachineSeconds, rec.RetiredAt)
	}
	if n := e.driver.starts(); n != 3 {
		t.Errorf("machines started = %d, want 3 (first exec, after suspension, after retirement)", n)
	}
}

func TestIdleClockStartsWhenTheLastExecReturns(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("mkfifo /tmp/gate")
	done := make(chan error, 1)
	go func() {
		_, err := e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "cat /tmp/gate"})
		done <- err
	}()
	waitFor(t, func() bool {
		ps := e.exec(`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done`).Stdout
		return strings.Contains(ps, "\ncat /tmp/gate \n")
	})
	e.tick(time.Hour)
	e.wantState(sandbox.StateRunning) // a running exec is activity

	e.exec("echo open > /tmp/gate")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.tick(sandbox.DefaultIdleTimeout - time.Second)
	e.wantState(sandbox.StateRunning)
	e.tick(time.Second)
	e.wantState(sandbox.StateSuspended)
}

func TestRecoverSuspendsSandboxesOfACrashedServer(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo precious > work.txt")
	started := e.rec().StartedAt
	// The server dies: its machines die with it (--die-with-parent), the
	// store still says running.
	for _, m := range e.driver.machines {
		m.Stop()
	}
	e.clock.Advance(time.Hour)
	e.mgr = e.manager()
	if err := e.mgr.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := e.wantState(sandbox.StateSuspended)
	if got := e.archived(rec.ID)["work.txt"]; got != "precious\n" {
		t.Errorf("archive after recovery has work.txt = %q", got)
	}
	if want := sandbox.DefaultIdleTimeout.Seconds(); rec.MachineSeconds != want {
		t.Errorf("machine_seconds = %v, want %v: billed until it would have been suspended, not for the hour the server was down (started %v)", rec.MachineSeconds, want, started)
	}
	if res := e.exec("cat work.txt"); res.Stdout != "precious\n" {
		t.Errorf("after recovery: %q", res.Stdout)
	}
}

func TestOverLimitArchiveKeepsPreviousAndLosesNothing(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.MaxArchiveBytes = 256 << 10 })
	e.exec("echo v1 > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	first := e.wantState(sandbox.StateSuspended)

	e.exec("echo v2 > notes.txt; head -c 1048576 /dev/urandom > noise.bin")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	if !strings.Contains(rec.ArchiveError, "max_archive_bytes 262144") {
		t.Errorf("archive_error = %q, want the limit named", rec.ArchiveError)
	}
	if rec.ArchiveBytes != first.ArchiveBytes || e.archived(rec.ID)["notes.txt"] != "v1\n" {
		t.Errorf("the previous archive was replaced: %d bytes, notes %q", rec.ArchiveBytes, e.archived(rec.ID)["notes.txt"])
	}
	if res := e.exec("cat notes.txt; wc -c < noise.bin"); res.Stdout != "v2\n1048576\n" {
		t.Errorf("after a failed archive the kept folder must be used: %q", res.Stdout)
	}

	// Idle again, then past retirement: the folder still holds what no
	// archive does, so the sandbox is not retired and nothing is lost.
	e.exec("echo v3 > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	e.tick(sandbox.DefaultRetireAfter)
	rec = e.wantState(sandbox.StateSuspended)
	if !strings.Contains(rec.ArchiveError, "not retired") {
		t.Errorf("archive_error = %q, want it to say why the sandbox is not retired", rec.ArchiveError)
	}
	if res := e.exec("cat notes.txt; wc -c < noise.bin"); res.Stdout != "v3\n1048576\n" {
		t.Errorf("after the retirement was held back: %q", res.Stdout)
	}
	// Once the workspace fits again, retirement goes ahead from its archive.
	e.exec("rm noise.bin")
	e.tick(sandbox.DefaultIdleTimeout)
	e.tick(sandbox.DefaultRetireAfter)
	rec = e.wantState(sandbox.StateRetired)
	if rec.ArchiveError != "" || e.archived(rec.ID)["notes.txt"] != "v3\n" {
		t.Errorf("retired with archive error %q, notes %q", rec.ArchiveError, e.archived(rec.ID)["notes.txt"])
	}
}

// A workspace that never fits (its session ended, say) is not kept for ever:
// after four retirement periods it retires with the older archive, and the
// record says what was dropped.
func TestHeldRetirementEndsWithTheOlderArchive(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.MaxArchiveBytes = 256 << 10 })
	e.exec("echo v1 > notes.txt")
	e.tick(sandbox.DefaultIdleTimeout)
	e.exec("echo v2 > notes.txt; head -c 1048576 /dev/urandom > noise.bin")
	e.tick(sandbox.DefaultIdleTimeout)
	for range 3 {
		e.tick(sandbox.DefaultRetireAfter)
		if rec := e.wantState(sandbox.StateSuspended); !strings.Contains(rec.ArchiveError, "retires with the older archive at") {
			t.Fatalf("archive_error = %q, want when it will retire anyway", rec.ArchiveError)
		}
	}
	e.tick(sandbox.DefaultRetireAfter)
	rec := e.wantState(sandbox.StateRetired)
	if !strings.Contains(rec.ArchiveNote, "newer files were dropped") || e.archived(rec.ID)["notes.txt"] != "v1\n" {
		t.Errorf("retired: note %q, archive notes %q", rec.ArchiveNote, e.archived(rec.ID)["notes.txt"])
	}
}

func TestDeadMachineKeepsItsWorkspace(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo kept > notes.txt")
	e.driver.signalAgent(t, syscall.SIGKILL)
	_, err := e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "true"})
	if !errors.Is(err, sandbox.ErrMachineExited) {
		t.Fatalf("error = %v, want ErrMachineExited", err)
	}
	if rec := e.wantState(sandbox.StateSuspended); rec.Error == "" {
		t.Error("the record does not say why the machine stopped")
	}
	if res := e.exec("cat notes.txt"); res.Stdout != "kept\n" {
		t.Errorf("after the machine died: %q", res.Stdout)
	}
}

// An agent that stops answering (stopped from the host here: commands cannot
// reach it from their own pid namespaces) does not wedge the sandbox: the exec fails at its timeout plus the slack, the machine is
// given up with /workspace kept, and the next exec starts a fresh one.
func TestStoppedAgentIsGivenUp(t *testing.T) {
	defer sandbox.SetAnswerSlack(time.Second)()
	e := newEnv(t, nil)
	e.exec("echo kept > notes.txt")
	e.driver.signalAgent(t, syscall.SIGSTOP)
	_, err := e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "true", TimeoutSecs: 1})
	if !errors.Is(err, sandbox.ErrMachineExited) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("error = %v, want the silent agent named", err)
	}
	if rec := e.wantState(sandbox.StateSuspended); rec.Error == "" {
		t.Error("the record does not say why the machine was given up")
	}
	if res := e.exec("cat notes.txt"); res.Stdout != "kept\n" {
		t.Errorf("after the agent was stopped: %q", res.Stdout)
	}
	// Stopped again, then sent more stdin than a pipe holds: the write
	// itself blocks, and the guard still gives the machine up.
	e.exec("true") // a fresh machine
	e.driver.signalAgent(t, syscall.SIGSTOP)
	_, err = e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "wc -c", Stdin: strings.Repeat("x", 1<<20), TimeoutSecs: 1})
	if !errors.Is(err, sandbox.ErrMachineExited) {
		t.Fatalf("a large stdin to a stopped agent: %v, want the machine given up", err)
	}
	if res := e.exec("cat notes.txt"); res.Stdout != "kept\n" {
		t.Errorf("after the second stop: %q", res.Stdout)
	}
}

func TestConcurrentFirstExecsStartOneMachine(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.exec("true")
		}()
	}
	wg.Wait()
	if n := e.driver.starts(); n != 1 {
		t.Errorf("machines started = %d, want 1", n)
	}
}

func TestInvalidExecStartsNothing(t *testing.T) {
	e := newEnv(t, nil)
	_, err := e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "true", TimeoutSecs: 9999})
	var fe *sandbox.FieldError
	if !errors.As(err, &fe) || fe.Field != "timeout_secs" {
		t.Fatalf("error = %v, want a timeout_secs FieldError", err)
	}
	if e.driver.starts() != 0 {
		t.Error("an invalid exec started a machine")
	}
	if _, err := e.store.FindBySession(context.Background(), key.SessionID, key.Grant); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("an invalid exec created a record: %v", err)
	}
}

func TestArchiveDeletedOnlyOnceRetired(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo x > f")
	e.tick(sandbox.DefaultIdleTimeout)
	id := e.wantState(sandbox.StateSuspended).ID
	if err := e.mgr.DeleteArchive(context.Background(), id); !errors.Is(err, sandbox.ErrNotRetired) {
		t.Fatalf("delete while suspended: %v, want ErrNotRetired", err)
	}
	e.tick(sandbox.DefaultRetireAfter)
	e.wantState(sandbox.StateRetired)
	if err := e.mgr.DeleteArchive(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if rec := e.rec(); rec.ArchiveBytes != 0 {
		t.Errorf("archive_bytes = %d after deletion", rec.ArchiveBytes)
	}
	if res := e.exec("ls"); res.Stdout != "" {
		t.Errorf("after deleting the archive the workspace should start empty: %q", res.Stdout)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

// What an archive cannot hold (a pipe, a link out of /workspace) is named on
// the record, not only in the server's log: the agent and the operator can
// see why it is gone after a restore.
func TestArchiveNamesWhatItLeftOut(t *testing.T) {
	e := newEnv(t, nil)
	e.exec("echo kept > kept.txt; mkfifo pipe; ln -s /etc/passwd out; ln -s kept.txt in")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	if !strings.Contains(rec.ArchiveNote, "pipe") || !strings.Contains(rec.ArchiveNote, "out") || strings.Contains(rec.ArchiveNote, "in,") || strings.HasSuffix(rec.ArchiveNote, " in") {
		t.Fatalf("archive_note = %q, want the pipe and the link out named, and the link in kept", rec.ArchiveNote)
	}
	if res := e.exec("cat in; ls"); res.Stdout != "kept\nin\nkept.txt\n" {
		t.Errorf("after the restore: %q", res.Stdout)
	}
}
