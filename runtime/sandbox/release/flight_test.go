package release

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFirstUseBuildIsSharedByTheStartsWaitingForIt: while the image is
// built on first use, the other starts that need it wait for that build
// and get its result; when it fails (no mirror reachable), each of them
// does not build again in turn (one failing build each, queued behind one
// another, for as long as execs keep coming). The next start after the
// failure tries again. The stand-in mmdebstrap fails after a second, as
// one that reaches no mirror does, and counts its runs.
func TestFirstUseBuildIsSharedByTheStartsWaitingForIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("builds need root")
	}
	bin, runs := t.TempDir(), filepath.Join(t.TempDir(), "runs")
	script := "#!/bin/sh\necho run >> \"$SUBAKO_TEST_RUNS\"\nsleep 1\necho 'E: no mirror reachable' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "mmdebstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("SUBAKO_TEST_RUNS", runs)
	cache := &Cache{Dir: t.TempDir(), UID: 65534, GID: 65534, Timeout: time.Minute}
	count := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}

	const starts = 5
	var wg sync.WaitGroup
	errs := make([]error, starts)
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i > 0 {
				time.Sleep(200 * time.Millisecond) // while the first one builds
			}
			_, errs[i] = cache.Root(context.Background(), "2026", nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "no mirror reachable") {
			t.Errorf("start %d: %v, want the build's failure", i, err)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("%d starts waiting for one first-use build ran mmdebstrap %d times, want once", starts, n)
	}
	if _, err := cache.Root(context.Background(), "2026", nil); err == nil || count() != 2 {
		t.Fatalf("the next start after a failed build: %v, %d runs; want it to try again", err, count())
	}
}
