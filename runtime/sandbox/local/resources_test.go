package local

import (
	"os"
	"path/filepath"
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
	// The count is read again from a descriptor kept open: a second kill is
	// seen as new, not the first one again, nor missed.
	if res := run(t, m, "python3 -c 'b = bytearray(400 << 20); print(len(b))'"); res.ExitCode != 128+9 ||
		!strings.Contains(res.Stderr, "1 process(es) killed while this command ran") {
		t.Fatalf("allocating 400 MiB again: %+v; want 137 and one kill named", res)
	}
	if res := run(t, m, "head -c 100M /dev/zero > big"); !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("100 MiB on the spec's 64 MiB disk (the driver's is 1 GiB): %+v", res)
	}
}

// A machine with a memory limit keeps its OOM counter open while it runs
// (each exec reads it twice) and lets go of it when it stops: a server that
// runs sandboxes for months holds no descriptor of a machine long gone.
func TestOOMCounterHeldWhileTheMachineRunsAndClosedAtStop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits need a root server")
	}
	d := newDriver(t, Config{})
	m := start(t, d, sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 256 << 20}})
	run(t, m, "true")
	if m.cg == nil || m.cg.oomFile == "" {
		t.Skip("this host gives machines no memory cgroup")
	}
	if held := descriptorsTo(t, m.cg.oomFile); held != 1 {
		t.Fatalf("%d descriptors to %s while the machine runs; want the one kept for its execs", held, m.cg.oomFile)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if held := descriptorsTo(t, m.cg.oomFile); held != 0 {
		t.Fatalf("%d descriptors to %s after the machine stopped", held, m.cg.oomFile)
	}
}

// descriptorsTo counts this process's open descriptors naming path.
func descriptorsTo(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, path) {
			n++
		}
	}
	return n
}
