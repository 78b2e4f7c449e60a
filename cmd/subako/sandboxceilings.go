package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/subako/subako/runtime/tools"
)

// sandboxCeilings are the most one sandbox grant may ask for: a version
// whose grant asks more is refused at save and publish, naming the field
// and the flag.
type sandboxCeilings struct {
	MaxCPU         int
	MaxMemory      byteSize
	MaxDisk        byteSize
	MaxIdleTimeout time.Duration
}

func bindSandboxCeilings(fs *flag.FlagSet, c *sandboxCeilings) {
	d := tools.DefaultSandboxCeilings
	fs.IntVar(&c.MaxCPU, "sandbox-max-cpu", d.CPUPercent, "most CPU a sandbox grant may ask (resources.cpu_percent), in percent of one core")
	c.MaxMemory = byteSize(d.MemoryMiB << 20)
	fs.Var(&c.MaxMemory, "sandbox-max-memory", "most memory a sandbox grant may ask (resources.memory_mib), e.g. 8GiB")
	c.MaxDisk = byteSize(d.DiskMiB << 20)
	fs.Var(&c.MaxDisk, "sandbox-max-disk", "largest /workspace a sandbox grant may ask (resources.disk_mib), e.g. 16GiB")
	fs.DurationVar(&c.MaxIdleTimeout, "sandbox-max-idle-timeout", time.Duration(d.IdleTimeoutSecs)*time.Second,
		"longest idle timeout a sandbox grant may ask (idle_timeout_secs)")
}

func (c sandboxCeilings) validate() error {
	switch {
	case c.MaxCPU < tools.MinCPUPercent:
		return fmt.Errorf("--sandbox-max-cpu must be at least %d (percent of one core), not %d", tools.MinCPUPercent, c.MaxCPU)
	case c.MaxMemory < tools.MinMemoryMiB<<20:
		return fmt.Errorf("--sandbox-max-memory must be at least %dMiB, not %s", tools.MinMemoryMiB, c.MaxMemory.String())
	case c.MaxDisk < tools.MinDiskMiB<<20:
		return fmt.Errorf("--sandbox-max-disk must be at least %dMiB, not %s", tools.MinDiskMiB, c.MaxDisk.String())
	case c.MaxIdleTimeout < tools.MinIdleTimeoutSecs*time.Second:
		return fmt.Errorf("--sandbox-max-idle-timeout must be at least %ds, not %s", tools.MinIdleTimeoutSecs, c.MaxIdleTimeout)
	}
	return nil
}

func (c sandboxCeilings) tools() tools.SandboxCeilings {
	return tools.SandboxCeilings{CPUPercent: c.MaxCPU, MemoryMiB: int64(c.MaxMemory) >> 20, DiskMiB: int64(c.MaxDisk) >> 20,
		IdleTimeoutSecs: int(c.MaxIdleTimeout / time.Second)}
}
