package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/subako/subako/runtime/sandbox"
)

// Per-exec pid limits (cgroup v1). The machine's pids cgroup gets
// execSlots children, e0..e3, each with pids.max at the machine's Pids
// limit; the agent starts each exec's init in the least used slot, so a
// fork bomb fills its own slot and the sandbox's other execs still run. The
// slots and their limits are root's: the sandbox may only move processes
// into them (their cgroup.procs and tasks are its own), never raise a
// limit. The machine as a whole holds at most execSlots×Pids plus
// machineReservePids for bwrap, the agent and the exec inits.
//
// On cgroup v2 the machine's one limit applies to all its execs together.
const (
	execSlots          = 4
	machineReservePids = 64
	// execPidsMount is where the slots appear inside the sandbox.
	execPidsMount = sandbox.ExecPidsDir
)

// pidsDir is the machine's v1 pids cgroup, if it has one.
func (c *cgroups) pidsDir(root string) string {
	if c == nil {
		return ""
	}
	prefix := filepath.Join(root, "pids") + string(filepath.Separator)
	for _, dir := range c.dirs {
		if strings.HasPrefix(dir, prefix) {
			return dir
		}
	}
	return ""
}

// makeExecSlots creates the slots in the machine's pids cgroup dir and
// raises the machine's own limit to hold them all.
func makeExecSlots(dir string, pids int64, uid, gid int) error {
	for i := range execSlots {
		slot := filepath.Join(dir, "e"+strconv.Itoa(i))
		if err := os.Mkdir(slot, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("local: exec pid slot %s: %w", slot, err)
		}
		if err := writeCgroupFile(filepath.Join(slot, "pids.max"), strconv.FormatInt(pids, 10)); err != nil {
			return fmt.Errorf("local: exec pid slot %s: %w", slot, err)
		}
		for _, f := range []string{"cgroup.procs", "tasks"} {
			if err := os.Chown(filepath.Join(slot, f), uid, gid); err != nil {
				return fmt.Errorf("local: exec pid slot %s: %w", slot, err)
			}
		}
	}
	total := strconv.FormatInt(execSlots*pids+machineReservePids, 10)
	if err := writeCgroupFile(filepath.Join(dir, "pids.max"), total); err != nil {
		return fmt.Errorf("local: machine pid limit %s: %w", dir, err)
	}
	return nil
}
