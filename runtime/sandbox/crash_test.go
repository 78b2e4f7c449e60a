package sandbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// The steps of suspend, restore and retire a crash can interrupt; each is a
// failpoint in the lifecycle.
var crashSteps = []string{
	"suspend.stopped", "suspend.archived", "suspend.recorded", "suspend.moved", "suspend.deleting",
	"restore.unpacked", "restore.swapped", "start.recorded",
	"retire.recorded", "retire.moved",
	// A crash during the recovery of a crash: Recover is run again.
	"suspend.recorded+recover.moved", "suspend.recorded+recover.deleting", "retire.recorded+recover.moved",
}

// The crash child's environment: the step to die at, and where the world
// the parent checks afterwards lives.
const (
	envCrashStep = "SANDBOX_CRASH_STEP"
	envCrashBase = "SANDBOX_CRASH_BASE"
	envCrashData = "SANDBOX_CRASH_DATA"
	envCrashDB   = "SANDBOX_CRASH_DB"
)

var crashEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// hashWorkspace prints the number of files in /workspace and one hash of
// every file's name and content.
const hashWorkspace = `find . -type f | wc -l; find . -type f | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum`

// A process killed (SIGKILL) at any step of a suspension, a restore or a
// retirement loses nothing: a new Manager over the same folders, database
// and archives recovers, and the next exec sees every file of the last
// workspace with the same content. On SQLite, and on PostgreSQL when
// SUBAKO_TEST_DATABASE_URL is set.
func TestCrashAtEveryStepLosesNothing(t *testing.T) {
	for _, step := range crashSteps {
		t.Run(step, func(t *testing.T) {
			base := crashBase(t)
			dataDir, dbURL := modelstest.Fresh(t)
			db := openCrashDB(t, dataDir, dbURL, true)

			for _, at := range strings.Split(step, "+") {
				child := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
				child.Env = append(os.Environ(), envCrashStep+"="+at, envCrashBase+"="+base, envCrashData+"="+dataDir, envCrashDB+"="+dbURL)
				out, err := child.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("the child was not killed at %s: %v\n%s", at, err, out)
				}
			}
			want, err := os.ReadFile(filepath.Join(base, "expected"))
			if err != nil {
				t.Fatal(err)
			}

			mgr := crashManager(t, base, db, crashEpoch.Add(24*time.Hour))
			if err := mgr.Recover(context.Background()); err != nil {
				t.Fatalf("recover: %v", err)
			}
			for _, left := range []string{".trash/*", "*/workspace.restoring"} {
				if m, _ := filepath.Glob(filepath.Join(base, "machines", left)); len(m) > 0 {
					t.Errorf("left behind after recovery: %v", m)
				}
			}
			res, err := mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: hashWorkspace, TimeoutSecs: 60})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stdout != string(want) {
				t.Errorf("after a crash at %s the workspace is\n%s want\n%s", step, res.Stdout, want)
			}
		})
	}
}

// TestCrashChild is the process TestCrashAtEveryStepLosesNothing kills: it
// runs a sandbox through a suspension and a restore, writes what its
// workspace holds, then dies at the step it is given.
func TestCrashChild(t *testing.T) {
	step := os.Getenv(envCrashStep)
	if step == "" {
		t.Skip("run by TestCrashAtEveryStepLosesNothing")
	}
	base := os.Getenv(envCrashBase)
	db := openCrashDB(t, os.Getenv(envCrashData), os.Getenv(envCrashDB), false)
	arm := func() {
		sandbox.SetFailpoint(func(at string) {
			if at == step {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		})
	}
	if strings.HasPrefix(step, "recover.") {
		// A restarted server, killed while it recovers from the last crash.
		arm()
		crashManager(t, base, db, crashEpoch.Add(12*time.Hour)).Recover(context.Background())
		t.Fatalf("the failpoint %s was never reached", step)
	}
	clock := sandbox.NewManualClock(crashEpoch)
	mgr := crashManagerOn(t, base, db, clock)
	run := func(cmd string) string {
		res, err := mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: cmd, TimeoutSecs: 60})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %q: %v %+v", cmd, err, res)
		}
		return res.Stdout
	}
	tick := func(d time.Duration) {
		clock.Advance(d)
		if err := mgr.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// 3,000 files in 30 folders, suspended and restored once, then changed.
	run(`for d in $(seq 0 29); do mkdir d$d; for i in $(seq 0 99); do echo "$d-$i" > d$d/f$i; done; done`)
	tick(sandbox.DefaultIdleTimeout)
	run(`echo changed > d0/f0; rm d1/f1; mkdir new; for i in $(seq 0 99); do echo "new $i" > new/g$i; done`)
	if err := os.WriteFile(filepath.Join(base, "expected"), []byte(run(hashWorkspace)), 0o644); err != nil {
		t.Fatal(err)
	}
	switch strings.Split(step, ".")[0] {
	case "suspend":
		arm()
		tick(sandbox.DefaultIdleTimeout)
	case "restore", "start":
		tick(sandbox.DefaultIdleTimeout)
		arm()
		run("true")
	case "retire":
		tick(sandbox.DefaultIdleTimeout)
		arm()
		tick(sandbox.DefaultRetireAfter)
	}
	t.Fatalf("the failpoint %s was never reached", step)
}

// crashBase is a folder the sandbox uid can pass through.
func crashBase(t *testing.T) string {
	base := t.TempDir()
	for d := base; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	return base
}

// openCrashDB opens the test's database; the parent migrates it and adds
// the session the sandbox belongs to.
func openCrashDB(t *testing.T, dataDir, url string, setup bool) *models.DB {
	t.Helper()
	db, err := models.Open(dataDir, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if !setup {
		return db
	}
	if _, err := db.Migrate(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO agents (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", []any{"agt1", "crash", now, now}},
		{"INSERT INTO versions (id, agent_id, number, state, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)", []any{"ver1", "agt1", 1, "published", "{}", now, now}},
		{"INSERT INTO sessions (id, version_id, agent_id, state, token_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)", []any{key.SessionID, "ver1", "agt1", "active", "h1", now}},
	} {
		if err := db.Exec(q.sql, q.args...).Error; err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	return db
}

func crashManager(t *testing.T, base string, db *models.DB, at time.Time) *sandbox.Manager {
	return crashManagerOn(t, base, db, sandbox.NewManualClock(at))
}

// crashManagerOn is a server's Manager over base's folders and db, on the
// real driver and the gorm Store the server uses.
func crashManagerOn(t *testing.T, base string, db *models.DB, clock *sandbox.ManualClock) *sandbox.Manager {
	t.Helper()
	d, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	archives, err := archive.NewLocal(filepath.Join(base, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := sandbox.NewManager(sandbox.Config{Driver: d, Archives: archives, Store: runtime.NewSandboxStore(db),
		Clock: clock, Dir: filepath.Join(base, "machines")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close(context.Background()) })
	return mgr
}
