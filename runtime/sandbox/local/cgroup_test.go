package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// fakeHierarchy lays out the files the kernel would show, in a temp folder.
func fakeHierarchy(t *testing.T, v2 bool) string {
	root := t.TempDir()
	if v2 {
		os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids"), 0o644)
		os.WriteFile(filepath.Join(root, "cgroup.procs"), nil, 0o644)
		return root
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		os.MkdirAll(filepath.Join(root, c), 0o755)
		os.WriteFile(filepath.Join(root, c, "cgroup.procs"), nil, 0o644)
	}
	return root
}

func TestCgroupLimitsAreWrittenForV1AndV2(t *testing.T) {
	lim := sandbox.Limits{MemoryBytes: 512 << 20, Pids: 256, CPUPercent: 150}
	tests := []struct {
		name  string
		v2    bool
		files map[string]string
	}{
		{"v1", false, map[string]string{
			"memory/subako/s1/memory.limit_in_bytes": "536870912",
			"pids/subako/s1/pids.max":                "256",
			"cpu/subako/s1/cpu.cfs_period_us":        "100000",
			"cpu/subako/s1/cpu.cfs_quota_us":         "150000",
		}},
		{"v2", true, map[string]string{
			"cgroup.subtree_control":        "+memory +pids +cpu",
			"subako/cgroup.subtree_control": "+memory +pids +cpu",
			"subako/s1/memory.max":          "536870912",
			"subako/s1/memory.swap.max":     "0",
			"subako/s1/pids.max":            "256",
			"subako/s1/cpu.max":             "150000 100000",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeHierarchy(t, tc.v2)
			cg, err := newCgroups(root, "s1", lim)
			if err != nil {
				t.Fatal(err)
			}
			for file, want := range tc.files {
				if got, _ := os.ReadFile(filepath.Join(root, file)); string(got) != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			if err := cg.add(4242); err != nil {
				t.Fatal(err)
			}
			procs, _ := os.ReadFile(filepath.Join(cg.dirs[0], "cgroup.procs"))
			if string(procs) != "4242" {
				t.Errorf("cgroup.procs = %q", procs)
			}
		})
	}
}

func TestNoCgroupHierarchyMeansNoLimits(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-cgroups")
	_, err := newCgroups(root, "s1", sandbox.Limits{Pids: 10})
	if !errors.Is(err, errCgroupsUnavailable) {
		t.Fatalf("error = %v, want errCgroupsUnavailable", err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Error("folders were created outside a cgroup hierarchy")
	}
	if cg, err := newCgroups(root, "s1", sandbox.Limits{}); cg != nil || err != nil {
		t.Errorf("no limits: %v, %v; want nothing to do", cg, err)
	}
}

// TestCgroupDynModsReadsMountinfo: the start-up hint about favordynmods
// (cgroup_dynmods.go) is given on a host whose cgroup mounts lack it, and
// only there.
func TestCgroupDynModsReadsMountinfo(t *testing.T) {
	const hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw%s
`
	for _, c := range []struct {
		name, mountinfo  string
		mounted, favored bool
	}{
		{"hybrid, no option", fmt.Sprintf(hybrid, ""), true, false},
		{"hybrid, favordynmods on the unified mount", fmt.Sprintf(hybrid, ",nsdelegate,favordynmods"), true, true},
		{"v2 only, with it", "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,favordynmods,memory_recursiveprot\n", true, true},
		{"an option that only contains the word", "29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nofavordynmods\n", true, false},
		{"a mount point named favordynmods is not the option", "29 23 0:26 / /mnt/favordynmods rw,favordynmods - cgroup2 cgroup2 rw\n", true, false},
		{"no cgroups mounted", "22 1 0:21 / /proc rw - proc proc rw\n", false, false},
		{"a mount with an empty source", "29 23 0:26 / /sys/fs/cgroup rw - cgroup2  rw,favordynmods\n", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mounted, favored := cgroupDynMods(strings.NewReader(c.mountinfo))
			if mounted != c.mounted || favored != c.favored {
				t.Errorf("mounted %v, favored %v; want %v, %v", mounted, favored, c.mounted, c.favored)
			}
		})
	}
}

// TestRCUExpeditedSwitches: a host expediting its grace periods gets no
// favordynmods hint (its moves do not wait either), unless rcu_normal
// overrides it.
func TestRCUExpeditedSwitches(t *testing.T) {
	for _, c := range []struct {
		expedited, normal string
		want              bool
	}{
		{"1\n", "0\n", true},
		{"1\n", "", true},    // a kernel without rcu_normal
		{"2\n", "0\n", true}, // any but 0 is on
		{"0\n", "0\n", false},
		{"1\n", "1\n", false}, // rcu_normal wins
		{"1\n", "3\n", false},
		{"", "", false}, // neither readable
	} {
		if got := rcuExpedited(c.expedited, c.normal); got != c.want {
			t.Errorf("rcu_expedited %q, rcu_normal %q: %v, want %v", c.expedited, c.normal, got, c.want)
		}
	}
}
