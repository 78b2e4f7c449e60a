package tools

import (
	"fmt"
	"strconv"
)

// Resources are a sandbox grant's own machine size, an extension of the
// seed's format: "resources": {"cpu_percent": 200, "memory_mib": 1024,
// "disk_mib": 4096}. A field left out (0) takes the server's default.
type Resources struct {
	// CPUPercent is a share of one core: 100 is one core, 250 two and a half.
	CPUPercent int   `json:"cpu_percent,omitempty"`
	MemoryMiB  int64 `json:"memory_mib,omitempty"`
	// DiskMiB is the size of /workspace while the machine runs.
	DiskMiB int64 `json:"disk_mib,omitempty"`
}

// SandboxCeilings are the most a sandbox grant may ask for on this server
// (its --sandbox-max-* flags). A grant asking more is refused at save and
// at publish, naming the field and the ceiling.
type SandboxCeilings struct {
	CPUPercent      int
	MemoryMiB       int64
	DiskMiB         int64
	IdleTimeoutSecs int
}

// DefaultSandboxCeilings are the ceilings of a server not told otherwise.
var DefaultSandboxCeilings = SandboxCeilings{CPUPercent: 400, MemoryMiB: 8192, DiskMiB: 16384, IdleTimeoutSecs: 3600}

// Floors of a sandbox grant's resources and idle timeout: less would not
// boot a machine or would suspend it between two commands.
const (
	MinCPUPercent      = 10
	MinMemoryMiB       = 64
	MinDiskMiB         = 64
	MinIdleTimeoutSecs = 10
)

// SandboxCeilingsCatalog is a Catalog that knows the server's ceilings;
// one that does not is held to DefaultSandboxCeilings.
type SandboxCeilingsCatalog interface {
	SandboxCeilings() SandboxCeilings
}

func (v *validator) ceilings() SandboxCeilings {
	if c, ok := v.cat.(SandboxCeilingsCatalog); ok {
		return c.SandboxCeilings()
	}
	return DefaultSandboxCeilings
}

// resources reads a sandbox grant's optional "resources" object.
func (v *validator) resources(o obj) *Resources {
	n, ok := o.fs["resources"]
	if !ok || n.kind == nullNode {
		return nil
	}
	r, ok := v.object(o.at("resources"), n, "resources", "cpu_percent", "memory_mib", "disk_mib")
	if !ok {
		return nil
	}
	c := v.ceilings()
	out := &Resources{
		CPUPercent: int(v.wholeIn(r, "cpu_percent", MinCPUPercent, int64(c.CPUPercent), "--sandbox-max-cpu", "percent of one core")),
		MemoryMiB:  v.wholeIn(r, "memory_mib", MinMemoryMiB, c.MemoryMiB, "--sandbox-max-memory", "MiB"),
		DiskMiB:    v.wholeIn(r, "disk_mib", MinDiskMiB, c.DiskMiB, "--sandbox-max-disk", "MiB"),
	}
	if *out == (Resources{}) {
		return nil
	}
	return out
}

// idleTimeout reads a sandbox grant's optional "idle_timeout_secs".
func (v *validator) idleTimeout(o obj) int {
	return int(v.wholeIn(o, "idle_timeout_secs", MinIdleTimeoutSecs, int64(v.ceilings().IdleTimeoutSecs), "--sandbox-max-idle-timeout", "seconds"))
}

// wholeIn reads an optional whole number between lo and hi; the message
// names the field, the limit and the flag that sets the ceiling.
func (v *validator) wholeIn(o obj, key string, lo, hi int64, flag, unit string) int64 {
	n, present := o.fs[key]
	if !present || n.kind == nullNode {
		return 0
	}
	if n.kind != numberNode {
		v.add(n.off, wrongType(o.at(key), "a number", n))
		return 0
	}
	x, err := strconv.ParseInt(n.str, 10, 64)
	if err != nil {
		v.add(n.off, fieldError(o.at(key), "invalid_resource", fmt.Sprintf(
			"%s must be a whole number of %s from %d to %d; found %s", key, unit, lo, hi, quoteShort(n.str))))
		return 0
	}
	switch {
	case x > hi:
		v.add(n.off, fieldError(o.at(key), "over_ceiling", fmt.Sprintf(
			"%s is %d %s, over this server's ceiling of %d (%s)", key, x, unit, hi, flag)))
		return 0
	case x < lo:
		v.add(n.off, fieldError(o.at(key), "invalid_resource", fmt.Sprintf(
			"%s is %d %s; the least is %d", key, x, unit, lo)))
		return 0
	}
	return x
}

// resourceSettings are the grant's resources as a version diff shows them.
func resourceSettings(g Sandbox) []setting {
	r := Resources{}
	if g.Resources != nil {
		r = *g.Resources
	}
	num := func(x int64) string {
		if x == 0 {
			return ""
		}
		return strconv.FormatInt(x, 10)
	}
	return []setting{{"resources.cpu_percent", num(int64(r.CPUPercent))}, {"resources.memory_mib", num(r.MemoryMiB)},
		{"resources.disk_mib", num(r.DiskMiB)}, {"idle_timeout_secs", num(int64(g.IdleTimeoutSecs))}}
}
