package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// diskChildEnv names the workspace a child server copies its disk out of.
const diskChildEnv = "SUBAKO_TEST_DISK_CHILD"

// TestDiskCopyChild is the server killed in TestKilledServerLeavesNoCopyRunning:
// it copies a mounted disk back into its folder, as a stop does.
func TestDiskCopyChild(t *testing.T) {
	ws := os.Getenv(diskChildEnv)
	if ws == "" {
		t.Skip("run by TestKilledServerLeavesNoCopyRunning")
	}
	recoverDisk(ws)
}

// A server killed while it copies a disk back into the folder takes its
// copy with it: the next server recovers the disk without racing a copy
// still writing, and every file comes back.
func TestKilledServerLeavesNoCopyRunning(t *testing.T) {
	needRoot(t)
	_, ws := machineWorkspace(t)
	for d := range 20 {
		dir := filepath.Join(ws, "d"+strconv.Itoa(d))
		os.Mkdir(dir, 0o755)
		for i := range 1000 {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte(strconv.Itoa(i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	disk, err := attachDisk(ws, 256<<20, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	disk.release() // the child takes the lock, as the next server would

	child := exec.Command(os.Args[0], "-test.run=^TestDiskCopyChild$", "-test.count=1")
	child.Env = append(os.Environ(), diskChildEnv+"="+ws)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once its copy has begun, well before it ends.
	waitFor(t, func() bool {
		entries, _ := os.ReadDir(ws + diskOut)
		return len(entries) > 2
	})
	child.Process.Kill()
	child.Wait()
	if pid := copyingInto(ws + diskOut); pid != 0 {
		t.Errorf("the killed server's copy (pid %d) still runs", pid)
	}

	if err := recoverDisk(ws); err != nil {
		t.Fatalf("recovery after the killed copy: %v", err)
	}
	if isMountPoint(ws) {
		t.Fatal("the disk is still mounted after recovery")
	}
	if left := leftovers(t, ws); len(left) != 0 {
		t.Errorf("left next to the workspace: %v", left)
	}
	n := 0
	filepath.WalkDir(ws, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(ws, "d19", "999")); n != 20001 || err != nil || string(b) != "999" {
		t.Errorf("after recovery: %d files (want 20,001), d19/999 %q, %v", n, b, err)
	}
}

// copyingInto returns the pid of a live process whose command line names
// dir, once the killed child's processes had a moment to die.
func copyingInto(dir string) int {
	for try := 0; ; try++ {
		pid := 0
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, _ := os.ReadFile(p)
			if !strings.Contains(string(b), dir) {
				continue
			}
			stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
			if !strings.Contains(string(stat), ") Z ") {
				pid, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
			}
		}
		if pid == 0 || try == 10 {
			return pid
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A server recovers the disks of its own machines only: one another server
// on this host left (under another --data) is that server's to recover.
func TestServerLeavesAnotherServersDisks(t *testing.T) {
	needRoot(t)
	_, ws := machineWorkspace(t)
	disk, err := attachDisk(ws, 64<<20, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	disk.release() // its server crashed
	t.Cleanup(func() { recoverDisk(ws) })
	newDriver(t, Config{DiskBytes: 64 << 20, WorkspaceRoot: reachableDir(t, "other-machines")})
	if !isMountPoint(ws) {
		t.Error("a server unmounted a disk under another server's folder")
	}
}
