package sandbox_test

import (
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// BenchmarkSuspendRestore100MiB is one idle suspension (stop, archive) and
// the next exec (restore, start) of a 100 MiB workspace: 48 MiB random, plus
// the Python standard library. Compare with the archive package's
// BenchmarkTarCzf100MiB and BenchmarkTarXzf100MiB.
func BenchmarkSuspendRestore100MiB(b *testing.B) {
	e := newEnv(b, nil)
	setup := "head -c 50331648 /dev/urandom > blob && cp -r /usr/lib/python3.11 lib && du -sm . | cut -f1"
	if res := e.exec(setup); res.ExitCode != 0 {
		b.Fatalf("setup: %+v", res)
	}
	var suspend, restore time.Duration
	for b.Loop() {
		t0 := time.Now()
		e.tick(sandbox.DefaultIdleTimeout)
		t1 := time.Now()
		e.exec("true")
		suspend += t1.Sub(t0)
		restore += time.Since(t1)
	}
	b.ReportMetric(float64(suspend.Milliseconds())/float64(b.N), "ms-suspend")
	b.ReportMetric(float64(restore.Milliseconds())/float64(b.N), "ms-restore")
	if rec := e.rec(); rec.State != sandbox.StateRunning || rec.ArchiveError != "" {
		b.Fatalf("record after the loop: %+v", rec)
	}
}
