package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/subako/subako/runtime/sandbox"
)

// diskBytes is the size of spec's /workspace disk: the grant's, else the
// driver's default (0: no disk).
func (d *Driver) diskBytes(spec sandbox.Spec) int64 {
	if spec.Limits.DiskBytes > 0 {
		return spec.Limits.DiskBytes
	}
	return d.cfg.DiskBytes
}

// memoryLimit is the machine's memory limit as its cgroup holds it, or 0.
func (c *cgroups) memoryLimit() int64 {
	if c == nil {
		return 0
	}
	for _, dir := range c.dirs {
		for _, name := range []string{"memory.limit_in_bytes", "memory.max"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return 0
}

// noteOOM tells the command's result that the kernel killed one of the
// machine's processes at its memory limit while it ran (kills counted
// before it), so a 137 does not read as a crash of the program.
func (m *Machine) noteOOM(res *sandbox.ExecResult, before int) {
	after := m.cg.oomKills()
	if after <= before {
		return
	}
	note := fmt.Sprintf("\nsubako: killed by the kernel: the sandbox reached its memory limit of %d MiB "+
		"(the grant's resources.memory_mib, bounded by --sandbox-max-memory); %d process(es) killed while this command ran\n",
		m.cg.memoryLimit()>>20, after-before)
	if len(res.Stderr)+len(note) <= sandbox.MaxOutputBytes {
		res.Stderr += note
	} else {
		res.Stderr = res.Stderr[:max(sandbox.MaxOutputBytes-len(note), 0)] + note
		res.StderrTruncated = true
	}
	res.StderrBytes += int64(len(note))
}
