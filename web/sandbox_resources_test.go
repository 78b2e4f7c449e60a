package web_test

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox/local"
)

// A grant asking 256 MiB of memory, a 64 MiB /workspace and a one-minute
// idle timeout: a command allocating 400 MiB is killed and told why, a
// file past 64 MiB fails with ENOSPC, and the sandbox is suspended after a
// minute idle rather than five.
const resourcesConfig = `{
  "sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
    "network": {"type": "none"}, "default_policy": "allow",
    "resources": {"memory_mib": 256, "disk_mib": 64, "cpu_percent": 50}, "idle_timeout_secs": 60}]
}`

func TestSandboxGrantResourcesMemoryDiskAndIdleTimeout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("memory limits and workspace disks need a root server")
	}
	w := newSandboxWorld(t, resourcesConfig, local.Config{})
	s := w.session()

	st, c := w.call(s.Token, s.ID, execTool, map[string]any{"command": "python3 -c 'b = bytearray(400 << 20); print(len(b))'", "timeout_secs": 60}, 90)
	if st != 200 || c.Status != "succeeded" {
		t.Fatalf("exec: %d %+v", st, c)
	}
	out := string(c.Output)
	if !strings.Contains(out, `"exit_code":137`) || !strings.Contains(out, "memory limit of 256 MiB") || !strings.Contains(out, "resources.memory_mib") {
		t.Fatalf("allocating 400 MiB under a 256 MiB grant: %s; want exit 137 and the limit named", out)
	}
	if got := w.exec(s, "python3 -c 'b = bytearray(100 << 20); print(len(b))'"); got.Stdout != "104857600\n" {
		t.Fatalf("100 MiB under the 256 MiB limit: %+v", got)
	}
	if got := w.exec(s, "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null; head -c 100M /dev/zero > big; echo rc=$?"); !strings.Contains(got.Stderr, "No space left on device") {
		t.Fatalf("writing 100 MiB on a 64 MiB /workspace: %+v", got)
	}
	w.exec(s, "rm -f big")

	w.advance(59 * time.Second)
	if sb := w.sandboxOf(s); sb.State != "running" {
		t.Fatalf("after 59 s idle: %s", sb.State)
	}
	w.advance(time.Second)
	if sb := w.sandboxOf(s); sb.State != "suspended" {
		t.Fatalf("after the grant's 60 s idle timeout: %s, want suspended", sb.State)
	}
}

// A grant asking more than the server's ceilings, or less than a machine
// needs, is refused at save with the field, the ceiling and its flag named.
func TestSandboxGrantOverCeilingRefusedNamingFieldAndFlag(t *testing.T) {
	e := newEnv(t)
	owner := longToken(e.owner())
	_, draft := e.agentWithDraft(owner)
	config := strings.NewReplacer(`"memory_mib": 256`, `"memory_mib": 9000`, `"disk_mib": 64`, `"disk_mib": 10`,
		`"idle_timeout_secs": 60`, `"idle_timeout_secs": 7200`, `"cpu_percent": 50`, `"cpu_percent": 1.5`).Replace(resourcesConfig)
	st, raw := e.rawAPI(owner, "PUT", "/versions/"+draft.ID+"/config", config)
	body := string(raw)
	if st != 422 {
		t.Fatalf("over the ceilings: %d %s", st, body)
	}
	for _, want := range []string{
		`sandboxes[0].resources.memory_mib`, `memory_mib is 9000 MiB, over this server's ceiling of 8192 (--sandbox-max-memory)`,
		`sandboxes[0].resources.disk_mib`, `disk_mib is 10 MiB; the least is 64`,
		`sandboxes[0].resources.cpu_percent`, `cpu_percent must be a whole number`,
		`sandboxes[0].idle_timeout_secs`, `idle_timeout_secs is 7200 seconds, over this server's ceiling of 3600 (--sandbox-max-idle-timeout)`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, body)
		}
	}
	if st, body := e.rawAPI(owner, "PUT", "/versions/"+draft.ID+"/config", resourcesConfig); st != 200 ||
		!strings.Contains(string(body), `"memory_mib":256`) || !strings.Contains(string(body), `"idle_timeout_secs":60`) {
		t.Fatalf("within the ceilings: %d %s", st, body)
	}
}

// The grant form has the four fields, shows the ceilings, refuses a value
// over one beside its field, and saves and shows back what fits.
func TestSandboxGrantFormResources(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	_, v := e.agentWithDraft(owner.token())
	form := url.Values{"name": {"workbench"}, "release": {"2026"}, "network": {"none"}, "default_policy": {"allow"},
		"cpu_percent": {"150"}, "memory_mib": {"9000"}, "disk_mib": {""}, "idle_timeout_secs": {"60"}}
	resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form)
	if resp.StatusCode != 422 || !strings.Contains(page, "memory_mib is 9000 MiB, over this server&#39;s ceiling of 8192 (--sandbox-max-memory)") ||
		!strings.Contains(page, `max="8192"`) {
		t.Fatalf("over the memory ceiling: %d\n%s", resp.StatusCode, page)
	}
	form.Set("memory_mib", "256")
	if resp, page := owner.post("/versions/"+v.ID+"/grants/sandbox", form); resp.StatusCode != 303 {
		t.Fatalf("within the ceilings: %d\n%s", resp.StatusCode, page)
	}
	edit := mustGet(owner, "/versions/"+v.ID+"/grants/sandbox/workbench/edit")
	for _, want := range []string{`name="cpu_percent" type="number" inputmode="numeric" min="10" max="400" step="1" value="150"`,
		`name="memory_mib" type="number" inputmode="numeric" min="64" max="8192" step="1" value="256"`, `name="idle_timeout_secs"`, `value="60"`} {
		if !strings.Contains(edit, want) {
			t.Errorf("the edit form lacks %s", want)
		}
	}
}
