package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/release"
)

var (
	imagesOnce sync.Once
	images     *release.Cache
	imagesErr  error
)

// testImages is the machine-wide release cache (SUBAKO_RELEASE_CACHE):
// release 2026 is built once per machine, by the first test that needs it.
func testImages(t testing.TB) *release.Cache {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("release images need a root server (mmdebstrap, the overlay mount)")
	}
	imagesOnce.Do(func() {
		images = &release.Cache{Dir: release.SharedCacheDir(), UID: 65534, GID: 65534}
		_, imagesErr = images.Root(context.Background(), "2026", os.Stderr)
	})
	if imagesErr != nil {
		t.Fatalf("build release 2026: %v", imagesErr)
	}
	return images
}

// upstream is a Debian version's upstream part: 1:2.39.5-0+deb12u2 → 2.39.5.
func upstream(v string) string {
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.IndexAny(v, "-+~"); i >= 0 {
		v = v[:i]
	}
	return v
}

func TestImageHasPinnedToolsAndNoHostPath(t *testing.T) {
	cache := testImages(t)
	man, err := cache.Manifest("2026")
	if err != nil || man == nil {
		t.Fatalf("manifest: %v %v", man, err)
	}
	// Files only the host has: if the host's /usr or /opt showed through,
	// the sandbox would see them.
	marker := "subako-host-only-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	for _, p := range []string{"/usr/local/share/" + marker, "/opt/" + marker} {
		if err := os.WriteFile(p, []byte("host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	m := start(t, newDriver(t, Config{Images: cache}), sandbox.Spec{})

	tools := map[string]string{
		"python3 --version":                     "Python " + upstream(man.Version("python3")),
		"node --version":                        "v" + upstream(man.Version("nodejs")),
		"npm --version":                         upstream(man.Version("npm")),
		"git --version":                         "git version " + upstream(man.Version("git")),
		"curl --version":                        "curl " + upstream(man.Version("curl")),
		"jq --version":                          "jq-" + upstream(man.Version("jq")),
		"python3 -m venv -h":                    "usage: venv",
		"python3 -m pip -V":                     "pip " + upstream(man.Version("python3-pip")),
		"gcc --version":                         "gcc",
		"ls /etc/ssl/certs/ca-certificates.crt": "/etc/ssl/certs/ca-certificates.crt",
	}
	for command, want := range tools {
		if res := run(t, m, command+" 2>&1"); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
			t.Errorf("%s: exit %d %q, want %q (the manifest's version)", command, res.ExitCode, res.Stdout, want)
		}
	}
	res := run(t, m, "ls /usr/local/share/"+marker+" /opt/"+marker+" /usr/bin/bwrap 2>&1; cat /etc/debian_version")
	if strings.Count(res.Stdout, "No such file") != 3 {
		t.Errorf("a host file shows in the sandbox: %q", res.Stdout)
	}
	host, _ := os.ReadDir("/usr/bin")
	inside := run(t, m, "ls /usr/bin | wc -l").Stdout
	if n := strings.TrimSpace(inside); n == "0" || n == strconv.Itoa(len(host)) {
		t.Errorf("ls /usr/bin inside lists %s entries, as many as the host's %d", strings.TrimSpace(inside), len(host))
	}
	if res := run(t, m, "id -u; test -e /usr/local/bin/uv && echo uv"); res.Stdout != "0\n" && !(man.UV && res.Stdout == "0\nuv\n") {
		t.Errorf("id -u / uv: %q, want root inside and uv only if the manifest says so (%v)", res.Stdout, man.UV)
	}
}

func TestImageInstallsOutsideWorkspaceAreGoneAfterARestart(t *testing.T) {
	cache := testImages(t)
	d := newDriver(t, Config{Images: cache})
	ws := workspace(t)
	spec := sandbox.Spec{ID: "timage-restart", WorkspaceDir: ws}
	m := start(t, d, spec)
	// A package installed from a local folder with pip, a global npm
	// package from a local tarball, a file in /usr/local/bin, an edit of
	// /etc: all as root inside, all outside /workspace.
	res := run(t, m, `set -e
mkdir -p /tmp/pkg/hello_subako && cd /tmp/pkg
printf 'def hi():\n    return "hi from pip"\n' > hello_subako/__init__.py
printf '[project]\nname = "hello-subako"\nversion = "1.0"\n[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n' > pyproject.toml
pip install --no-index --no-build-isolation -q . >/dev/null
mkdir -p /tmp/npmpkg && cd /tmp/npmpkg
printf '{"name":"hello-subako","version":"1.0.0","bin":{"hello-subako":"cli.js"}}' > package.json
printf '#!/usr/bin/env node\nconsole.log("hi from npm")\n' > cli.js
npm pack -q >/dev/null && npm i -g --offline ./hello-subako-1.0.0.tgz >/dev/null 2>&1
printf '#!/bin/sh\necho hi from usr-local\n' > /usr/local/bin/x && chmod +x /usr/local/bin/x
echo 10.9.9.9 extra >> /etc/hosts
echo kept > /workspace/kept.txt
python3 -c 'import hello_subako; print(hello_subako.hi())'; hello-subako; x`)
	if res.ExitCode != 0 || res.Stdout != "hi from pip\nhi from npm\nhi from usr-local\n" {
		t.Fatalf("installs outside /workspace: exit %d\nstdout %q\nstderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.cfg.RunDir, overlayPrefix+spec.ID)); !os.IsNotExist(err) {
		t.Errorf("the stopped machine's overlay is still there: %v", err)
	}
	m = start(t, d, spec)
	res = run(t, m, "cat /workspace/kept.txt; python3 -c 'import hello_subako' 2>&1 | tail -1; command -v hello-subako x; grep -c extra /etc/hosts")
	if res.Stdout != "kept\nModuleNotFoundError: No module named 'hello_subako'\n0\n" {
		t.Errorf("after a restart: %q, want only /workspace kept", res.Stdout)
	}
}

// TestImageAptInstall installs a Debian package from the mirror, as root
// inside the sandbox, through slirp4netns.
func TestImageAptInstall(t *testing.T) {
	cache := testImages(t)
	m := start(t, newDriver(t, Config{Images: cache}), sandbox.Spec{Network: sandbox.NetworkUnrestricted})
	res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "apt-get update -qq && apt-get install -y -qq hello >/dev/null && hello", TimeoutSecs: 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "Hello, world!\n" {
		t.Fatalf("apt-get install hello: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// TestImageRootIsBounded: what a machine writes outside /workspace is
// bounded by RootBytes (its overlay's tmpfs): past it, ENOSPC inside.
func TestImageRootIsBounded(t *testing.T) {
	cache := testImages(t)
	m := start(t, newDriver(t, Config{Images: cache, RootBytes: 64 << 20}), sandbox.Spec{})
	res := run(t, m, "head -c 100000000 /dev/zero > /usr/local/big; echo exit $?; df -k / | tail -1")
	if !strings.Contains(res.Stderr, "No space left on device") || !strings.Contains(res.Stdout, "exit 1") {
		t.Errorf("writing 100 MB outside /workspace with a 64 MiB root: %q %q", res.Stdout, res.Stderr)
	}
	if res := run(t, m, "rm /usr/local/big && echo ok > /usr/local/small && cat /usr/local/small"); res.Stdout != "ok\n" {
		t.Errorf("after freeing the root: %+v", res)
	}
}

// TestImageWithUV: `release build --uv` on a built image adds the given uv
// (here a stand-in that prints a version: no registry this machine reaches
// has uv) without building again; the manifest says uv is there, with its
// version and a new digest, and a sandbox on the image runs it. The image
// it was made from is unchanged.
func TestImageWithUV(t *testing.T) {
	shared := testImages(t)
	before, _ := shared.Manifest("2026")
	dir, err := os.MkdirTemp(filepath.Dir(shared.Dir), "subako-uv-test-") // the shared cache's disk: hard links
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o711)
	if out, err := exec.Command("cp", "-al", filepath.Join(shared.Dir, "2026"), filepath.Join(dir, "2026")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	uv := filepath.Join(t.TempDir(), "uv")
	if err := os.WriteFile(uv, []byte("#!/bin/sh\necho 'uv 0.9.9-test'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := &release.Cache{Dir: dir, UID: shared.UID, GID: shared.GID}
	var progress strings.Builder
	m, err := cache.Build(context.Background(), "2026", release.BuildOptions{UV: uv, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !m.UV || m.UVVersion != "0.9.9-test" || m.Digest == before.Digest || !strings.Contains(progress.String(), "adding uv") {
		t.Fatalf("manifest uv=%v %q digest %s (before %s); progress %q", m.UV, m.UVVersion, m.Digest, before.Digest, progress.String())
	}
	if _, err := os.Stat(filepath.Join(shared.Dir, "2026/root/usr/local/bin/uv")); !before.UV && !os.IsNotExist(err) {
		t.Errorf("the image uv was added to changed: %v", err)
	}
	mach := start(t, newDriver(t, Config{Images: cache}), sandbox.Spec{})
	if res := run(t, mach, "uv --version"); res.Stdout != "uv 0.9.9-test\n" {
		t.Errorf("uv inside: %+v", res)
	}
	if !strings.Contains(cache.Info("2026"), "uv 0.9.9-test") {
		t.Errorf("summary %q does not say uv is there", cache.Info("2026"))
	}
}
