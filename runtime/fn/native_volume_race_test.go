package fn

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A session's sandbox binds the same folder read-write and its processes
// outlive an exec: while a native call's after() cleans /volume, such a
// process swaps a folder for a link to a host folder. Nothing outside the
// volume may be removed.
func TestNativeVolumeCleanFollowsNoSwappedLink(t *testing.T) {
	base := t.TempDir()
	vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "host")
	for _, d := range []string{vol, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, `bad\name`)
	if err := os.WriteFile(victim, []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := openNativeVolume(VolumeMount{Dir: vol, Write: true, MaxNewFiles: 1000, MaxNewBytes: 1 << 20}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the sandbox's process
		defer close(done)
		x := filepath.Join(vol, "x")
		for i := 0; !stop.Load(); i++ {
			os.RemoveAll(x)
			os.Mkdir(x, 0o755)
			os.WriteFile(filepath.Join(x, `bad\name`), nil, 0o644)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			os.RemoveAll(x)
			os.Symlink(outside, x)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		v.after()
		if _, err := os.Lstat(victim); err != nil {
			break
		}
	}
	stop.Store(true)
	<-done
	if _, err := os.Lstat(victim); err != nil {
		t.Fatalf("cleaning /volume after a call removed a host file through a swapped link: %v", err)
	}
}
