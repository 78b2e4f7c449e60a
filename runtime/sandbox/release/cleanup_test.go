package release

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// mountsUnder lists the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// watch closes seen once a progress line holds word.
type watch struct {
	mu   sync.Mutex
	word string
	seen chan struct{}
	all  strings.Builder
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	if strings.Contains(w.all.String(), w.word) && w.seen != nil {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

// TestBuildStoppedHalfwayRemovesNothingOutsideTheCache: mmdebstrap in root
// mode bind-mounts the host's /dev/shm (and device files, proc, sysfs) into
// the root it builds. A build stopped while they are mounted (its timeout,
// ^C on `subako release build`), or killed with the server (kill -9), must
// not delete through them: the host folder bound there keeps its files, no
// mount stays in the cache, and the half-built folder is gone (the one a
// killed build left, at the next build). The stand-in mmdebstrap does what
// the real one does before installing packages: it binds a host folder at
// dev/shm of the root, then works until stopped without unmounting it.
func TestBuildStoppedHalfwayRemovesNothingOutsideTheCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("builds and bind mounts need root")
	}
	shm := t.TempDir() // the host's /dev/shm, say
	keep := filepath.Join(shm, "PostgreSQL.12345")
	if err := os.WriteFile(keep, []byte("another program's shared memory"), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := &Cache{Dir: t.TempDir(), UID: 65534, GID: 65534, Timeout: time.Minute}
	t.Cleanup(func() {
		for _, m := range mountsUnder(t, cache.Dir) {
			unix.Unmount(m, unix.MNT_DETACH)
		}
	})
	bin := t.TempDir()
	script := `#!/bin/sh
for a; do root=$a; done
mkdir -p "$root/dev/shm" "$root/usr/bin"
ln -s /dev/shm "$root/run"
mount --bind "$SUBAKO_TEST_SHM" "$root/dev/shm" || exit 1
echo "installing packages"
exec sleep 600
`
	if err := os.WriteFile(filepath.Join(bin, "mmdebstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("SUBAKO_TEST_SHM", shm)

	// Stopped halfway (as ^C or the build's timeout stops it).
	ctx, cancel := context.WithCancel(context.Background())
	w := &watch{word: "installing packages", seen: make(chan struct{})}
	seen := w.seen
	go func() {
		select {
		case <-seen:
		case <-time.After(2 * time.Minute):
		}
		cancel()
	}()
	if _, err := cache.Build(ctx, "2026", BuildOptions{Progress: w}); err == nil {
		t.Fatal("a stopped build succeeded")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("a stopped build deleted a file of the host folder mounted in its root: %v\n%s", err, w.all.String())
	}
	if m := mountsUnder(t, cache.Dir); len(m) > 0 {
		t.Fatalf("a stopped build left mounts in the cache: %v", m)
	}
	if left, _ := filepath.Glob(filepath.Join(cache.Dir, ".2026-build-*")); len(left) > 0 {
		t.Fatalf("a stopped build left its folder: %v", left)
	}

	// Killed with the server (nothing ran its cleanup): the next build
	// removes the half-built folder and what is mounted in it, through
	// nothing. This next build fails at once (mmdebstrap cannot mount).
	half := filepath.Join(cache.Dir, ".2026-build-123456", "root")
	if err := os.MkdirAll(filepath.Join(half, "dev/shm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/shm", filepath.Join(half, "run")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(shm, filepath.Join(half, "dev/shm"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SUBAKO_TEST_SHM", filepath.Join(shm, "missing"))
	w = &watch{word: "-"}
	if _, err := cache.Build(context.Background(), "2026", BuildOptions{Progress: w}); err == nil {
		t.Fatal("the next build succeeded with a failing mmdebstrap")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("removing a killed build's folder deleted a file of the host folder mounted in it: %v\n%s", err, w.all.String())
	}
	if m := mountsUnder(t, cache.Dir); len(m) > 0 {
		t.Fatalf("a killed build's mounts stayed: %v", m)
	}
	if _, err := os.Stat(filepath.Dir(half)); err == nil {
		t.Fatalf("a killed build's folder stayed in the cache:\n%s", w.all.String())
	}
	if !strings.Contains(w.all.String(), "left by a build that did not finish") {
		t.Errorf("the progress does not say the half-built folder was removed:\n%s", w.all.String())
	}
	if m, _ := cache.Manifest("2026"); m != nil {
		t.Fatalf("a half image is in use: %+v", m)
	}
}
