package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
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

func newDriver(t testing.TB, cfg Config) *Driver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// workspace returns a fresh workspace folder the sandbox uid can reach.
func workspace(t testing.TB) string {
	t.Helper()
	return reachableDir(t, "workspace")
}

// reachableDir makes t.TempDir's 0700 folders searchable (not listable) by
// the sandbox uid and returns a new folder inside.
func reachableDir(t testing.TB, name string) string {
	t.Helper()
	tmp := t.TempDir()
	for d := tmp; d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	dir := filepath.Join(tmp, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func start(t testing.TB, d *Driver, spec sandbox.Spec) *Machine {
	t.Helper()
	if spec.ID == "" {
		spec.ID = "t" + strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
		if len(spec.ID) > 64 {
			spec.ID = spec.ID[:64]
		}
	}
	if spec.Release == "" {
		spec.Release = "2026"
	}
	if spec.Network == "" {
		spec.Network = sandbox.NetworkNone
	}
	if spec.WorkspaceDir == "" {
		spec.WorkspaceDir = workspace(t)
	}
	m, err := d.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop() })
	return m.(*Machine)
}

func run(t testing.TB, m sandbox.Machine, command string) sandbox.ExecResult {
	t.Helper()
	res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: command, TimeoutSecs: 30})
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	return res
}
