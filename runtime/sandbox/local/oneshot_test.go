package local

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A staging folder a dead server left is unmounted and removed, its
// source's files kept; a young one (a live call's) is left alone.
func TestCleanOneShotsKeepsTheFilesAndLiveCalls(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("staging mounts need root")
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "keep.txt"), []byte("volume file"), 0o600); err != nil {
		t.Fatal(err)
	}
	stage := func() string {
		dir, err := os.MkdirTemp("", "subako-oneshot-")
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, "0")
		os.Mkdir(target, 0o700)
		if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(target, unix.MNT_DETACH); os.Remove(target); os.Remove(dir) })
		return dir
	}
	dead, live := stage(), stage()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dead, old, old)
	CleanOneShots("subako-test-none-", 10*time.Minute)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead server's staging folder is still there: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(live, "0", "keep.txt")); err != nil || string(b) != "volume file" {
		t.Fatalf("the live call's mount: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(src, "keep.txt")); err != nil || string(b) != "volume file" {
		t.Fatalf("the source lost its file: %q %v", b, err)
	}
}
