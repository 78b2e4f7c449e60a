package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's /workspace lives on its own ext4 image while the machine runs,
// so what it writes is bounded by Config.DiskBytes: past it the sandbox gets
// ENOSPC and the host's disk is untouched. The image is a sparse file next
// to the workspace folder, filled from the folder at start (mkfs.ext4 -d)
// and mounted over it; at stop its content is copied back into a plain
// folder and the image removed. Between runs the lifecycle (archives,
// restores) only ever sees that plain folder.
//
// Files in <machine dir> while a disk is attached or being detached:
//
//	workspace.img        the image; flock'ed by the server that runs it
//	workspace            the mount point (the host folder underneath is stale)
//	workspace.disk-out   the image's content copied out at stop
//	workspace.disk-done  marker: disk-out is complete
//	workspace.disk-old   the stale host folder, moved aside
//
// A crash at any step is finished by recoverDisk at the next start.
const (
	diskImage = ".img"
	diskOut   = ".disk-out"
	diskDone  = ".disk-done"
	diskOld   = ".disk-old"
)

// errDiskInUse: another live server (or driver) runs this disk.
var errDiskInUse = errors.New("locked")

// workspaceDisk is one machine's mounted image.
type workspaceDisk struct {
	ws   string
	lock *os.File // the image, flock'ed: a live server's disk is never recovered
}

// attachDisk fills a fresh image of size bytes from ws and mounts it on ws.
func attachDisk(ws string, size int64, uid, gid int) (*workspaceDisk, error) {
	return attachDiskFrom(ws, size, uid, gid, "")
}

// attachDiskFrom is attachDisk with a folder for disk templates: an empty
// ws gets a copy of the template of its size rather than a mkfs.
func attachDiskFrom(ws string, size int64, uid, gid int, templates string) (*workspaceDisk, error) {
	if err := recoverDisk(ws); err != nil {
		return nil, err
	}
	img := ws + diskImage
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return nil, fmt.Errorf("local: workspace disk: mkfs.ext4 is not installed (apt-get install e2fsprogs): %w", err)
	}
	made := false
	if templates != "" && isEmptyDir(ws) {
		if tpl, err := diskTemplate(templates, mkfs, size); err == nil {
			os.Remove(img)
			made = copySparse(tpl, img) == nil
		}
	}
	if !made {
		if err := makeImage(mkfs, img, ws, size); err != nil {
			os.Remove(img)
			return nil, err
		}
	}
	lock, err := lockImage(img)
	if err != nil {
		os.Remove(img)
		return nil, err
	}
	w := &workspaceDisk{ws: ws, lock: lock}
	if err := mountImage(img, ws); err != nil {
		w.release()
		os.Remove(img)
		return nil, fmt.Errorf("local: mount the workspace disk of %s: %w", ws, err)
	}
	// mkfs adds lost+found, which is not the sandbox's; the root must be
	// the sandbox user's, as the folder it replaces.
	os.Remove(filepath.Join(ws, "lost+found"))
	if err := os.Lchown(ws, uid, gid); err != nil {
		w.detach()
		return nil, fmt.Errorf("local: workspace disk of %s: %w", ws, err)
	}
	if err := os.Chmod(ws, 0o700); err != nil {
		w.detach()
		return nil, fmt.Errorf("local: workspace disk of %s: %w", ws, err)
	}
	return w, nil
}

// makeImage makes a sparse ext4 image holding the files of src. A folder
// already larger than size (a limit lowered since, an upload) still starts,
// on an image just large enough, so its owner can make room.
func makeImage(mkfs, img, src string, size int64) error {
	mk := func(size int64) error {
		os.Remove(img)
		f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
		err = f.Truncate(size)
		f.Close()
		if err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
		// No blocks reserved for root (the sandbox user gets the whole size);
		// an inode per 8 KiB, so many small files fit; lazy init keeps the
		// image sparse.
		out, err := helper(mkfs, "-q", "-F", "-m", "0", "-i", "8192", "-d", src,
			"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", img).CombinedOutput()
		if err != nil {
			return fmt.Errorf("local: make the workspace disk: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	err := mk(size)
	if err == nil {
		return nil
	}
	used, werr := treeBytes(src)
	if werr != nil || used+used/4+(64<<20) <= size {
		return err
	}
	return mk(used + used/4 + (64 << 20))
}

// treeBytes adds up the sizes of the files under dir.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, err := d.Info(); err == nil {
			n += info.Size() + 4096
		}
		return nil
	})
	return n, err
}

func lockImage(img string) (*os.File, error) {
	f, err := os.Open(img)
	if err != nil {
		return nil, fmt.Errorf("local: workspace disk: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("local: workspace disk %s is in use by another server: %w", img, errDiskInUse)
	}
	return f, nil
}

func (w *workspaceDisk) release() {
	if w != nil && w.lock != nil {
		w.lock.Close()
		w.lock = nil
	}
}

// detach copies the image's content back into a plain folder at ws and
// removes the image. Every process of the machine must be gone.
func (w *workspaceDisk) detach() error {
	if w == nil {
		return nil
	}
	defer w.release()
	return finishDisk(w.ws)
}

// finishDisk takes ws from "image mounted on it" to "plain folder with the
// image's content", from whichever step a crash left it at.
func finishDisk(ws string) error {
	img, out, done, old := ws+diskImage, ws+diskOut, ws+diskDone, ws+diskOld
	if _, err := os.Stat(done); err != nil {
		if !isMountPoint(ws) {
			// A machine that crashed with its server and a reboot since:
			// the image holds the newest files, so mount it again.
			if err := mountImage(img, ws); err != nil {
				if isExt4(img) {
					return fmt.Errorf("local: the workspace disk %s holds the newest files of %s but does not mount: %w",
						img, ws, err)
				}
				// An image a crash left half made: the folder underneath
				// is still the truth.
				return os.Remove(img)
			}
		}
		if err := os.RemoveAll(out); err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
		if err := os.Mkdir(out, 0o700); err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
		if msg, err := helper("cp", "-a", ws+"/.", out+"/").CombinedOutput(); err != nil {
			return fmt.Errorf("local: copy the workspace disk of %s out (it stays mounted): %v: %s", ws, err, strings.TrimSpace(string(msg)))
		}
		if err := syncCopied(out); err != nil {
			return err
		}
		if err := os.WriteFile(done, nil, 0o600); err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
	}
	if err := unmount(ws); err != nil {
		return err
	}
	if _, err := os.Stat(out); err == nil {
		if _, err := os.Stat(ws); err == nil {
			if err := os.RemoveAll(old); err != nil {
				return fmt.Errorf("local: workspace disk: %w", err)
			}
			if err := os.Rename(ws, old); err != nil {
				return fmt.Errorf("local: workspace disk: %w", err)
			}
		}
		if err := os.Rename(out, ws); err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
	}
	for _, p := range []string{old, img, done} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("local: workspace disk: %w", err)
		}
	}
	return nil
}

// helper is a program the driver runs on a workspace (mkfs, mount, cp). It
// dies with the server: a copy left running by a killed server would go on
// writing into the folder the next server recovers, and hold its disk busy.
func helper(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// isExt4 reports whether img carries an ext4 superblock, which mkfs writes
// last: an image without one never held a sandbox's files.
func isExt4(img string) bool {
	f, err := os.Open(img)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 2)
	_, err = f.ReadAt(magic, 1024+0x38)
	return err == nil && magic[0] == 0x53 && magic[1] == 0xEF
}

// syncDir makes what was written under dir durable: the copy must be on
// disk before the image it came from is removed.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("local: workspace disk: %w", err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("local: workspace disk: sync %s: %w", dir, err)
	}
	return nil
}

// unmount detaches the image from ws; the loop device goes with it
// (mount -o loop sets autoclear).
func unmount(ws string) error {
	for try := 0; isMountPoint(ws); try++ {
		err := unix.Unmount(ws, 0)
		if err == nil {
			continue
		}
		if !errors.Is(err, unix.EBUSY) || try >= 50 {
			return fmt.Errorf("local: unmount the workspace disk of %s: %w", ws, err)
		}
		time.Sleep(20 * time.Millisecond) // the last process is still exiting
	}
	return nil
}

// recoverDisk finishes what a crashed server left at ws, unless a live
// server holds the image.
func recoverDisk(ws string) error {
	img := ws + diskImage
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(ws + diskDone); err == nil {
			return finishDisk(ws) // a crash after the image was removed
		}
		return nil
	}
	lock, err := lockImage(img)
	if err != nil {
		return err
	}
	defer lock.Close()
	return finishDisk(ws)
}

// RecoverWorkspace implements sandbox.WorkspaceRecoverer: a disk whose
// stop could not copy it back (the host's disk full, say) stays mounted on
// the folder; it is copied back before the lifecycle uses the folder again.
func (d *Driver) RecoverWorkspace(ws string) error {
	if !d.root {
		return nil
	}
	return recoverDisk(ws)
}

// recoverStaleDisks runs recoverDisk for every workspace under root
// (<root>/<id>/workspace) and every workspace disk still mounted there, before the
// lifecycle reads any workspace folder.
func recoverStaleDisks(root string) []error {
	seen := map[string]bool{}
	var wss []string
	if root != "" {
		imgs, _ := filepath.Glob(filepath.Join(root, "*", "workspace"+diskImage))
		dones, _ := filepath.Glob(filepath.Join(root, "*", "workspace"+diskDone))
		for _, p := range append(imgs, dones...) {
			wss = append(wss, strings.TrimSuffix(strings.TrimSuffix(p, diskImage), diskDone))
		}
	}
	// Mounted disks under root only: a disk under another server's folder
	// (another --data on this host) is that server's to recover.
	for _, mp := range mountedDisks() {
		if root == "" || strings.HasPrefix(mp, filepath.Clean(root)+"/") {
			wss = append(wss, mp)
		}
	}
	var errs []error
	for _, ws := range wss {
		if seen[ws] {
			continue
		}
		seen[ws] = true
		if err := recoverDisk(ws); err != nil && !errors.Is(err, errDiskInUse) {
			errs = append(errs, err)
		}
	}
	return errs
}

// mountedDisks lists mount points that are workspace disks: a loop mount on
// a folder whose image is the folder's name + ".img".
func mountedDisks() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || filepath.Base(f[4]) != "workspace" {
			continue
		}
		mp := unescapeMount(f[4])
		if _, err := os.Stat(mp + diskImage); err == nil {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isMountPoint reports whether something is mounted on dir.
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}
