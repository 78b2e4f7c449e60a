package sandbox_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// The test binary is also the agent inside the sandboxes it starts.
func TestMain(m *testing.M) {
	sandbox.RunAgentIfRequested()
	if _, err := exec.LookPath("bwrap"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: these tests run real sandboxes and need bubblewrap: apt-get install -y bubblewrap slirp4netns")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// countingDriver is the real local driver, counting starts and keeping the
// machines so a test can kill them as a server crash would.
type countingDriver struct {
	*local.Driver
	mu       sync.Mutex
	machines []sandbox.Machine
}

func (d *countingDriver) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Machine, error) {
	m, err := d.Driver.Start(ctx, spec)
	if err == nil {
		d.mu.Lock()
		d.machines = append(d.machines, m)
		d.mu.Unlock()
	}
	return m, err
}

// signalAgent signals the agent of the last machine started, from the host:
// commands cannot reach it (each exec has its own pid namespace), but a
// kernel's OOM killer or an operator can.
func (d *countingDriver) signalAgent(t testing.TB, sig syscall.Signal) {
	t.Helper()
	d.mu.Lock()
	m := d.machines[len(d.machines)-1].(*local.Machine)
	d.mu.Unlock()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", m.HostPID(), m.HostPID()))
	agent, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || agent == 0 {
		t.Fatalf("no agent under the sandbox's PID 1: %q, %v", b, err)
	}
	if err := syscall.Kill(agent, sig); err != nil {
		t.Fatal(err)
	}
}

func (d *countingDriver) starts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.machines)
}

type env struct {
	t        testing.TB
	clock    *sandbox.ManualClock
	store    *sandbox.MemStore
	archives *archive.Local
	driver   *countingDriver
	mgr      *sandbox.Manager
	cfg      sandbox.Config
	mu       sync.Mutex
	usage    []sandbox.UsageEvent
}

var key = sandbox.Key{SessionID: "ses1", Grant: "workbench", Release: "2026", Network: sandbox.NetworkNone}

func newEnv(t testing.TB, change func(*sandbox.Config)) *env {
	t.Helper()
	base := t.TempDir()
	// The sandbox uid must reach <Dir>/<id>/workspace; t.TempDir is 0700.
	os.Chmod(base, 0o711)
	os.Chmod(filepath.Dir(base), 0o711)
	d, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	archives, err := archive.NewLocal(filepath.Join(base, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: sandbox.NewManualClock(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)),
		store: sandbox.NewMemStore(), archives: archives, driver: &countingDriver{Driver: d}}
	e.cfg = sandbox.Config{Driver: e.driver, Archives: archives, Store: e.store, Clock: e.clock,
		Dir: filepath.Join(base, "machines"), OnUsage: e.record}
	if change != nil {
		change(&e.cfg)
	}
	e.mgr = e.manager()
	t.Cleanup(func() { e.mgr.Close(context.Background()) })
	return e
}

// manager returns a new Manager over the same store, folders and clock, as
// after a server restart.
func (e *env) manager() *sandbox.Manager {
	m, err := sandbox.NewManager(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) record(u sandbox.UsageEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.usage = append(e.usage, u)
}

func (e *env) exec(command string) sandbox.ExecResult {
	e.t.Helper()
	res, err := e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: command, TimeoutSecs: 30})
	if err != nil {
		e.t.Fatalf("exec %q: %v", command, err)
	}
	return res
}

func (e *env) rec() sandbox.Record {
	e.t.Helper()
	rec, err := e.store.FindBySession(context.Background(), key.SessionID, key.Grant)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

func (e *env) tick(advance time.Duration) {
	e.t.Helper()
	e.clock.Advance(advance)
	if err := e.mgr.Tick(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) wantState(want sandbox.State) sandbox.Record {
	e.t.Helper()
	rec := e.rec()
	if rec.State != want {
		e.t.Fatalf("state = %s, want %s (error %q, archive error %q)", rec.State, want, rec.Error, rec.ArchiveError)
	}
	return rec
}

// archived returns the files in the archive the sandbox's record names,
// with their content.
func (e *env) archived(id string) map[string]string {
	e.t.Helper()
	rec, err := e.cfg.Store.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	rc, _, err := e.archives.Open(context.Background(), rec.ArchiveRef())
	if err != nil {
		e.t.Fatal(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		e.t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[hdr.Name] = string(b)
	}
}
