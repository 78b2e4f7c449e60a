package tools

import (
	"errors"
	"strings"
	"testing"
)

type ceilingCatalog struct {
	testCatalog
	c SandboxCeilings
}

func (c ceilingCatalog) SandboxCeilings() SandboxCeilings { return c.c }

func grantWithResources(extra string) string {
	return `{"sandboxes": [{"name": "box", "environment": {"type": "platform", "release": "2026"},
	  "network": {"type": "none"}, "default_policy": "allow"` + extra + `}]}`
}

func TestSandboxResourcesWithinCeilingsParse(t *testing.T) {
	cfg, err := Parse([]byte(grantWithResources(`, "resources": {"cpu_percent": 200, "memory_mib": 256, "disk_mib": 1024}, "idle_timeout_secs": 60`)), cat)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Sandboxes[0]
	if g.Resources == nil || *g.Resources != (Resources{CPUPercent: 200, MemoryMiB: 256, DiskMiB: 1024}) || g.IdleTimeoutSecs != 60 {
		t.Fatalf("parsed %+v %+v", g.Resources, g)
	}
	if cfg, err := Parse([]byte(grantWithResources("")), cat); err != nil || cfg.Sandboxes[0].Resources != nil || cfg.Sandboxes[0].IdleTimeoutSecs != 0 {
		t.Fatalf("the seed's own format: %+v %v", cfg, err)
	}
}

func TestSandboxResourcesOverCeilingNameFieldAndFlag(t *testing.T) {
	low := ceilingCatalog{cat, SandboxCeilings{CPUPercent: 100, MemoryMiB: 512, DiskMiB: 2048, IdleTimeoutSecs: 600}}
	_, err := Parse([]byte(grantWithResources(`, "resources": {"cpu_percent": 150, "memory_mib": 1024, "disk_mib": "big", "gpu": 1}, "idle_timeout_secs": 5`)), low)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a ValidationError, got %v", err)
	}
	got := map[string]string{}
	for _, fe := range ve.Errors {
		got[fe.Field] = fe.Code + ": " + fe.Detail
	}
	want := map[string]string{
		"sandboxes[0].resources.cpu_percent": "over_ceiling: cpu_percent is 150 percent of one core, over this server's ceiling of 100 (--sandbox-max-cpu)",
		"sandboxes[0].resources.memory_mib":  "over_ceiling: memory_mib is 1024 MiB, over this server's ceiling of 512 (--sandbox-max-memory)",
		"sandboxes[0].resources.disk_mib":    "invalid_type: disk_mib must be a number; found a string",
		"sandboxes[0].idle_timeout_secs":     "invalid_resource: idle_timeout_secs is 5 seconds; the least is 10",
	}
	for f, w := range want {
		if got[f] != w {
			t.Errorf("%s: %q, want %q", f, got[f], w)
		}
	}
	if !strings.HasPrefix(got["sandboxes[0].resources.gpu"], "unknown_field") {
		t.Errorf("an unknown resource: %q", got["sandboxes[0].resources.gpu"])
	}
}
