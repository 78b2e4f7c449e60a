package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// A machine's root is one prepared bind: the release's programs, its
// alternatives and certificates are there, the root is read-only, and a
// start makes a bounded number of mounts (it made about 30 and 400 links).
func TestRootIsOnePreparedReadOnlyBind(t *testing.T) {
	d := newDriver(t, Config{})
	skill := reachableDir(t, "skill")
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("read me\n"), 0o644)
	m := start(t, d, sandbox.Spec{Skills: map[string]string{"helper": skill},
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, Pids: 128, CPUPercent: 100}})
	res := run(t, m, `awk 'BEGIN{print "awk ok"}'; grep -c sandbox /etc/passwd; test -s /etc/ssl/certs/ca-certificates.crt && echo certs ok
cat /skills/helper/SKILL.md; touch /etc/x /x /skills/x /skills/helper/x 2>&1 | grep -c 'Read-only'; wc -l < /proc/self/mountinfo`)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 6 || lines[0] != "awk ok" || lines[1] != "1" || lines[2] != "certs ok" || lines[3] != "read me" || lines[4] != "4" {
		t.Fatalf("inside the sandbox: %q (stderr %q); want awk through /etc/alternatives, the generated passwd, the certificates, the skill, 4 read-only refusals", res.Stdout, res.Stderr)
	}
	// root, /usr, /proc, /dev (its tmpfs, 6 device binds, pts), /dev/shm,
	// /tmp, /workspace, /skills (tmpfs + one skill), the exec pid slots.
	if n, err := strconv.Atoi(lines[5]); err != nil || n > 19 {
		t.Errorf("%s mounts in the sandbox, want at most 19", lines[5])
	}
}

// A release file the skeleton copies changes: the next start gets a new
// skeleton with the new content.
func TestChangedReleaseFileMakesANewRoot(t *testing.T) {
	rel := reachableDir(t, "release")
	for _, top := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + top); err == nil {
			os.Symlink(target, filepath.Join(rel, top))
		}
	}
	os.Symlink("/usr", filepath.Join(rel, "usr"))
	os.MkdirAll(filepath.Join(rel, "etc"), 0o755)
	services := filepath.Join(rel, "etc", "services")
	os.WriteFile(services, []byte("first 1/tcp\n"), 0o644)
	d := newDriver(t, Config{Releases: map[string]string{"test": rel}})
	m := start(t, d, sandbox.Spec{Release: "test"})
	if out := run(t, m, "cat /etc/services").Stdout; out != "first 1/tcp\n" {
		t.Fatalf("/etc/services = %q", out)
	}
	m.Stop()
	os.WriteFile(services, []byte("second 2/tcp\n"), 0o644)
	later := time.Now().Add(time.Second)
	os.Chtimes(services, later, later)
	m = start(t, d, sandbox.Spec{Release: "test"})
	if out := run(t, m, "cat /etc/services").Stdout; out != "second 2/tcp\n" {
		t.Fatalf("after the release changed, /etc/services = %q", out)
	}
}
