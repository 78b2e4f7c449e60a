package local

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Every cold start moves the sandbox's first process into its cgroups, and
// on cgroup v1 every exec's init moves into its pid slot. Unless a cgroup
// hierarchy is mounted with favordynmods, the kernel makes such a move wait
// for an RCU grace period when none ran just before: 5–16 ms here, about
// as long as a bare bwrap run takes, on every machine started after a pause
// (docs/benchmarks.md, "Fifth round: cold start"). A host that expedites
// its grace periods (/sys/kernel/rcu_expedited) does not wait that long
// either. Both are the host's to choose (the mount option makes forks and
// exits a little dearer; expedited grace periods interrupt every CPU), so
// the driver only says so, once per process, when neither is set.

// dynModsHint is said at most once per process.
var dynModsHint sync.Once

// hintDynMods logs, once, how to make cold starts shorter when no cgroup
// hierarchy is mounted with favordynmods and grace periods are not
// expedited.
func hintDynMods(log *slog.Logger) {
	dynModsHint.Do(func() {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return
		}
		defer f.Close()
		if mounted, favored := cgroupDynMods(f); mounted && !favored && !rcuExpedited(readSmall("/sys/kernel/rcu_expedited"), readSmall("/sys/kernel/rcu_normal")) {
			log.Info("sandbox: moving a sandbox into its cgroups waits for the kernel (about 5-16 ms per cold start); a cgroup2 mount with favordynmods, cgroup_favordynmods=true on the kernel's command line, or /sys/kernel/rcu_expedited set to 1 avoids that wait (see docs/deploy.md)")
		}
	})
}

// cgroupDynMods reads a mountinfo table: whether any cgroup hierarchy is
// mounted, and whether one is mounted with favordynmods (the option acts on
// every hierarchy's moves).
func cgroupDynMods(mountinfo io.Reader) (mounted, favored bool) {
	s := bufio.NewScanner(mountinfo)
	s.Buffer(make([]byte, 0, 4096), 1<<20)
	for s.Scan() {
		// "36 35 98:0 / /mnt rw,noatime master:1 - cgroup2 cgroup2 rw,nsdelegate":
		// after the separator come the type, the source and the
		// filesystem's own options.
		_, after, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		// Split on single spaces: a mount's source may be empty.
		fields := strings.Split(after, " ")
		if len(fields) < 3 || (fields[0] != "cgroup" && fields[0] != "cgroup2") {
			continue
		}
		mounted = true
		favored = favored || slices.Contains(strings.Split(fields[2], ","), "favordynmods")
	}
	return mounted, favored
}

// rcuExpedited says whether the kernel expedites grace periods, from its
// rcu_expedited and rcu_normal switches: integers, any but 0 on (rcu_normal
// wins; either may be absent).
func rcuExpedited(expedited, normal string) bool {
	on := func(v string) bool {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return err == nil && n != 0
	}
	return on(expedited) && !on(normal)
}

// readSmall is a small file's content, or "" when it cannot be read.
func readSmall(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
