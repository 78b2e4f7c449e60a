package local

import (
	"os"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// A machine's own limits (a grant's resources): 256 MiB of memory kills a
// command allocating 400 MiB and says so in its stderr; its own disk size
// replaces the driver's.
func TestSpecLimitsMemoryKillSaysWhyAndDiskPerSpec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits and workspace disks need a root server")
	}
	d := newDriver(t, Config{DiskBytes: 1 << 30, WorkspaceRoot: t.TempDir()})
	m := start(t, d, sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 256 << 20, DiskBytes: 64 << 20}})
	res := run(t, m, "python3 -c 'b = bytearray(400 << 20); print(len(b))'")
	if res.ExitCode != 128+9 || !strings.Contains(res.Stderr, "memory limit of 256 MiB") {
		t.Fatalf("allocating 400 MiB under 256 MiB: %+v; want 137 and the limit named", res)
	}
	if res := run(t, m, "python3 -c 'b = bytearray(100 << 20); print(len(b))'"); res.ExitCode != 0 || strings.Contains(res.Stderr, "memory limit") {
		t.Fatalf("100 MiB under 256 MiB: %+v", res)
	}
	if res := run(t, m, "head -c 100M /dev/zero > big"); !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("100 MiB on the spec's 64 MiB disk (the driver's is 1 GiB): %+v", res)
	}
}
