package handlers

import (
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/views/pages"
)

// resourceFields are the form's names of a sandbox grant's resources, as
// in the grant's config ("resources.<name>", and idle_timeout_secs beside).
var resourceFields = []string{"cpu_percent", "memory_mib", "disk_mib"}

// readResources reads the sandbox form's resources and idle timeout.
func readResources(c echo.Context, f *pages.GrantForm) {
	v := func(name string) string { return strings.TrimSpace(c.FormValue(name)) }
	f.Resources.CPUPercent, f.Resources.MemoryMiB, f.Resources.DiskMiB = v("cpu_percent"), v("memory_mib"), v("disk_mib")
	f.Resources.IdleTimeoutSecs = v("idle_timeout_secs")
}

// addResources puts the form's resources into the grant's config object:
// a whole number as a number, anything else as typed, for the config's
// checks to name; empty fields are left unsaid (the server's defaults).
func addResources(g map[string]any, f pages.GrantForm) {
	value := func(s string) any {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		return s
	}
	res := map[string]any{}
	for i, s := range []string{f.Resources.CPUPercent, f.Resources.MemoryMiB, f.Resources.DiskMiB} {
		if s != "" {
			res[resourceFields[i]] = value(s)
		}
	}
	if len(res) > 0 {
		g["resources"] = res
	}
	if f.Resources.IdleTimeoutSecs != "" {
		g["idle_timeout_secs"] = value(f.Resources.IdleTimeoutSecs)
	}
}

// loadResources fills the form from a saved grant.
func loadResources(f *pages.GrantForm, g tools.Sandbox) {
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	if r := g.Resources; r != nil {
		f.Resources.CPUPercent, f.Resources.MemoryMiB, f.Resources.DiskMiB = num(int64(r.CPUPercent)), num(r.MemoryMiB), num(r.DiskMiB)
	}
	f.Resources.IdleTimeoutSecs = num(int64(g.IdleTimeoutSecs))
}

// fillCeilings shows the server's ceilings beside the resource fields.
func (h *Handlers) fillCeilings(f *pages.GrantForm) {
	c := h.RT.SandboxCeilings()
	f.Resources.MaxCPUPercent, f.Resources.MaxMemoryMiB, f.Resources.MaxDiskMiB = int64(c.CPUPercent), c.MemoryMiB, c.DiskMiB
	f.Resources.MaxIdleTimeoutSecs = int64(c.IdleTimeoutSecs)
}
