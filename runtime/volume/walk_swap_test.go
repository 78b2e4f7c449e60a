package volume

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The sync after a call walks the volume when a folder was renamed and
// publishes every path it finds to the Files tab: a folder a session
// sandbox swaps for a link to a host folder mid-walk must not list the
// host folder's names.
func TestWalkListsNothingThroughASwappedLink(t *testing.T) {
	base := t.TempDir()
	vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "host")
	os.Mkdir(vol, 0o755)
	os.Mkdir(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "host-only-name"), []byte("x"), 0o644)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		x := filepath.Join(vol, "x")
		for i := 0; !stop.Load(); i++ {
			os.RemoveAll(x)
			os.Mkdir(x, 0o755)
			os.WriteFile(filepath.Join(x, "inside"), nil, 0o644)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			os.RemoveAll(x)
			os.Symlink(outside, x)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
		}
	}()
	var leaked string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && leaked == ""; {
		files, _ := Walk(vol, 1000)
		for _, f := range files {
			if strings.Contains(f.Path, "host-only-name") {
				leaked = f.Path
			}
		}
	}
	stop.Store(true)
	<-done
	if leaked != "" {
		t.Fatalf("Walk listed %q, a host file, through a folder swapped for a link", leaked)
	}
}
