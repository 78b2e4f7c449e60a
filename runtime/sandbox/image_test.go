package sandbox_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
	"github.com/subako/subako/runtime/sandbox/release"
)

// TestImageInstallsAreGoneAfterSuspendAndRestore: on the release image, an
// install outside /workspace works, and after the idle timeout suspends the
// sandbox and the next exec restores it, only /workspace is there again.
func TestImageInstallsAreGoneAfterSuspendAndRestore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("release images need a root server (mmdebstrap, the overlay mount)")
	}
	// The machine-wide cache: built at most once per machine.
	images := &release.Cache{Dir: release.SharedCacheDir(), UID: 65534, GID: 65534}
	if _, err := images.Root(context.Background(), "2026", os.Stderr); err != nil {
		t.Fatal(err)
	}
	d, err := local.New(local.Config{Images: images})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *sandbox.Config) { c.Driver = d })
	res := e.exec(`set -e
printf '#!/bin/sh\necho installed\n' > /usr/local/bin/tool && chmod +x /usr/local/bin/tool
mkdir -p /tmp/p/hello_pkg && printf 'X = 1\n' > /tmp/p/hello_pkg/__init__.py
printf '[project]\nname = "hello-pkg"\nversion = "1"\n[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n' > /tmp/p/pyproject.toml
pip install -q --no-index --no-build-isolation /tmp/p >/dev/null
echo kept > notes.txt
tool; python3 -c 'import hello_pkg; print("pip", hello_pkg.X)'; id -u`)
	if res.ExitCode != 0 || res.Stdout != "installed\npip 1\n0\n" {
		t.Fatalf("install outside /workspace: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	e.tick(sandbox.DefaultIdleTimeout + time.Second)
	e.wantState(sandbox.StateSuspended)

	res = e.exec("cat notes.txt; command -v tool || echo no tool; python3 -c 'import hello_pkg' 2>&1 | tail -1")
	if res.Stdout != "kept\nno tool\nModuleNotFoundError: No module named 'hello_pkg'\n" {
		t.Errorf("after suspend and restore: %q, want notes.txt kept and the installs gone", res.Stdout)
	}
	e.wantState(sandbox.StateRunning)
}
