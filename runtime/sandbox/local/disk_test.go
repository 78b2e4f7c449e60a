package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// machineWorkspace returns <root>/<id>/workspace holding kept.txt, as the
// lifecycle lays machines out.
func machineWorkspace(t *testing.T) (root, ws string) {
	t.Helper()
	root = reachableDir(t, "machines")
	ws = filepath.Join(root, "m1", "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(ws), 0o711)
	if err := os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("from before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, ws
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("workspace disks need a root server; without root the driver logs that /workspace has no size limit")
	}
}

// leftovers lists what the disk left next to the workspace folder.
func leftovers(t *testing.T, ws string) []string {
	entries, err := os.ReadDir(filepath.Dir(ws))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != "workspace" {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWorkspaceDiskBoundsWhatASandboxWrites(t *testing.T) {
	needRoot(t)
	root, ws := machineWorkspace(t)
	d := newDriver(t, Config{DiskBytes: 64 << 20, WorkspaceRoot: root})
	m := start(t, d, sandbox.Spec{ID: "m1", WorkspaceDir: ws})
	if !isMountPoint(ws) {
		t.Fatal("/workspace is not on its own disk while the machine runs")
	}
	if res := run(t, m, "cat kept.txt; ls -a"); res.Stdout != "from before\n.\n..\nkept.txt\n" {
		t.Errorf("the workspace inside: %q", res.Stdout)
	}
	res := run(t, m, "head -c 100M /dev/zero > big")
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("writing 100 MiB on a 64 MiB workspace: %+v; want No space left on device", res)
	}
	var st unix.Stat_t
	if err := unix.Stat(ws+diskImage, &st); err != nil || st.Blocks*512 > 64<<20 {
		t.Errorf("the image takes %d bytes of the host's disk (%v), want at most 64 MiB", st.Blocks*512, err)
	}
	if res := run(t, m, "rm big && echo made room > after.txt && cat after.txt"); res.Stdout != "made room\n" {
		t.Errorf("after removing the big file: %+v", res)
	}
	// What the copy back must carry: links, a pipe, a socket, a sparse file.
	run(t, m, `ln after.txt hard && ln -s after.txt soft && mkfifo pipe && truncate -s 1G sparse &&
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'`)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if isMountPoint(ws) {
		t.Error("the disk is still mounted after Stop")
	}
	if left := leftovers(t, ws); len(left) != 0 {
		t.Errorf("left next to the workspace after Stop: %v", left)
	}
	for name, want := range map[string]string{"kept.txt": "from before\n", "after.txt": "made room\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(b) != want {
			t.Errorf("%s after Stop: %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "big")); err == nil {
		t.Error("big is back after Stop")
	}
	var a, h, sp unix.Stat_t
	unix.Stat(filepath.Join(ws, "after.txt"), &a)
	unix.Stat(filepath.Join(ws, "hard"), &h)
	if a.Ino == 0 || a.Ino != h.Ino {
		t.Error("the hard link is a copy after Stop")
	}
	if err := unix.Stat(filepath.Join(ws, "sparse"), &sp); err != nil || sp.Size != 1<<30 || sp.Blocks > 8 {
		t.Errorf("the sparse file after Stop: %d bytes in %d blocks, %v", sp.Size, sp.Blocks, err)
	}
	for name, mode := range map[string]os.FileMode{"soft": os.ModeSymlink, "pipe": os.ModeNamedPipe, "sock": os.ModeSocket} {
		if fi, err := os.Lstat(filepath.Join(ws, name)); err != nil || fi.Mode().Type() != mode {
			t.Errorf("%s after Stop: %v, %v", name, fi, err)
		}
	}
	// And into the next run's disk.
	again := start(t, d, sandbox.Spec{ID: "m1", WorkspaceDir: ws})
	res = run(t, again, "stat -c '%h %s' after.txt sparse; test -p pipe && test -S sock && test -L soft && cat soft")
	if res.Stdout != "2 10\n1 1073741824\nmade room\n" {
		t.Errorf("the next run's workspace: %+v", res)
	}
}

// A server that dies with its machines leaves their disks mounted (or, after
// a reboot, only their images): the next server copies them back into the
// folders before the lifecycle archives them. A stop that could not copy a
// disk back leaves it mounted too: the next start copies it back first.
func TestWorkspaceDiskLeftByACrashIsCopiedBack(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name               string
		reboot, sameServer bool
	}{{"still mounted", false, false}, {"after a reboot", true, false}, {"stop failed, same server", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			root, ws := machineWorkspace(t)
			d := newDriver(t, Config{DiskBytes: 64 << 20, WorkspaceRoot: root})
			m := start(t, d, sandbox.Spec{ID: "m1", WorkspaceDir: ws})
			run(t, m, "echo newest > kept.txt")
			// The crash: every process gone, the disk left as it was.
			disk := m.disk
			m.disk = nil
			disk.release()
			m.Stop()
			if tc.reboot {
				if err := unix.Unmount(ws, 0); err != nil {
					t.Fatal(err)
				}
			}
			if tc.sameServer {
				// What the Manager calls before the next start.
				if err := d.RecoverWorkspace(ws); err != nil {
					t.Fatal(err)
				}
			} else {
				newDriver(t, Config{DiskBytes: 64 << 20, WorkspaceRoot: root})
			}
			if isMountPoint(ws) {
				t.Fatal("the disk is still mounted after the next server started")
			}
			if b, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(b) != "newest\n" {
				t.Errorf("kept.txt after recovery: %q, %v; want what the sandbox wrote", b, err)
			}
			if left := leftovers(t, ws); len(left) != 0 {
				t.Errorf("left next to the workspace after recovery: %v", left)
			}
		})
	}
}

func TestTmpIsBounded(t *testing.T) {
	m := start(t, newDriver(t, Config{TmpBytes: 16 << 20}), sandbox.Spec{})
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "head -c 32M /dev/zero > " + dir + "/x", TimeoutSecs: 30})
		if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left on device") {
			t.Errorf("writing 32 MiB in %s under a 16 MiB limit: %+v, %v", dir, res, err)
		}
	}
}

// An image a crash left half made (no file system yet) held no sandbox's
// files: the next server drops it and keeps the folder as it is.
func TestHalfMadeWorkspaceDiskIsDropped(t *testing.T) {
	needRoot(t)
	root, ws := machineWorkspace(t)
	f, err := os.Create(ws + diskImage)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 20)
	f.Close()
	newDriver(t, Config{DiskBytes: 64 << 20, WorkspaceRoot: root})
	if left := leftovers(t, ws); len(left) != 0 {
		t.Errorf("left next to the workspace: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(b) != "from before\n" {
		t.Errorf("kept.txt: %q, %v", b, err)
	}
}

// Copying a big workspace onto its disk takes as long as the files take to
// copy; the start's timeout bounds the sandbox's own start, after it, so a
// workspace that grew (or was uploaded) large still starts, every time.
func TestBigWorkspaceStillStarts(t *testing.T) {
	needRoot(t)
	root, ws := machineWorkspace(t)
	for d := range 20 {
		dir := filepath.Join(ws, "d"+strconv.Itoa(d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte("a small file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Copying 20,000 files in takes seconds, more than this timeout.
	d := newDriver(t, Config{DiskBytes: 512 << 20, WorkspaceRoot: root, StartTimeout: time.Second})
	m, err := d.Start(context.Background(), sandbox.Spec{ID: "m1", WorkspaceDir: ws, Release: "2026", Network: sandbox.NetworkNone})
	if err != nil {
		t.Fatalf("a workspace of 20,000 files did not start: %v", err)
	}
	defer m.Stop()
	if res := run(t, m, "cat kept.txt; cat d19/999; find . -type f | wc -l"); res.Stdout != "from before\na small file\n20001\n" {
		t.Errorf("the workspace inside: %+v", res)
	}
}
