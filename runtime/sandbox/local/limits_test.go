package local

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

func TestLimitsApplyThroughCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits need a root server; without root the driver logs that it runs without them")
	}
	m := start(t, newDriver(t, Config{}), sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 64 << 20, Pids: 40, CPUPercent: 50}})
	cg, _ := os.ReadFile("/proc/" + strconv.Itoa(m.HostPID()) + "/cgroup")
	if !strings.Contains(string(cg), "/subako/"+m.id) {
		t.Fatalf("sandbox PID 1 is not in its cgroup:\n%s", cg)
	}
	mem := run(t, m, "python3 -c 'b = bytearray(256 << 20); print(len(b))'")
	if mem.ExitCode != 128+9 {
		t.Errorf("allocating 256 MiB under a 64 MiB limit: %+v; want killed (137)", mem)
	}
	pids := run(t, m, "for i in $(seq 60); do sleep 5 & done 2>&1; wait")
	if !strings.Contains(pids.Stdout+pids.Stderr, "fork") && !strings.Contains(pids.Stdout+pids.Stderr, "Resource temporarily unavailable") {
		t.Errorf("60 processes under a 40-pid limit all started: %+v", pids)
	}
}
