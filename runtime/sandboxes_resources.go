package runtime

import (
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/tools"
)

// SandboxCeilings implements tools.SandboxCeilingsCatalog: a grant asking
// more than the server's --sandbox-max-* flags is refused at save and publish.
func (c catalog) SandboxCeilings() tools.SandboxCeilings { return c.r.SandboxCeilings() }

// SandboxCeilings are the most a sandbox grant may ask on this server.
func (r *Runtime) SandboxCeilings() tools.SandboxCeilings {
	if set := r.sandboxes(); set != nil {
		return set.ceilings
	}
	return tools.DefaultSandboxCeilings
}

// withCeilings fills the ceilings left zero with the defaults.
func withCeilings(c tools.SandboxCeilings) tools.SandboxCeilings {
	d := tools.DefaultSandboxCeilings
	if c.CPUPercent <= 0 {
		c.CPUPercent = d.CPUPercent
	}
	if c.MemoryMiB <= 0 {
		c.MemoryMiB = d.MemoryMiB
	}
	if c.DiskMiB <= 0 {
		c.DiskMiB = d.DiskMiB
	}
	if c.IdleTimeoutSecs <= 0 {
		c.IdleTimeoutSecs = d.IdleTimeoutSecs
	}
	return c
}

// grantResources puts a sandbox grant's resources and idle timeout into its
// key. A version published before the server's ceilings were lowered is
// held to the ceilings in force.
func (r *Runtime) grantResources(g tools.Sandbox, key *sandbox.Key) {
	c := r.SandboxCeilings()
	if res := g.Resources; res != nil {
		key.Limits.CPUPercent = min(res.CPUPercent, c.CPUPercent)
		key.Limits.MemoryBytes = min(res.MemoryMiB, c.MemoryMiB) << 20
		key.Limits.DiskBytes = min(res.DiskMiB, c.DiskMiB) << 20
	}
	if g.IdleTimeoutSecs > 0 {
		key.IdleTimeout = time.Duration(min(g.IdleTimeoutSecs, c.IdleTimeoutSecs)) * time.Second
	}
}
