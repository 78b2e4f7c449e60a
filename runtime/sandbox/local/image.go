package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox/release"
)

// An image release (one the release cache builds from Debian packages) is
// not bound read-only like a host-root release: each machine gets its own
// overlay, mounted by the server, whose lower layers are the release's
// skeleton (generated /etc, the agent, mount points) and the image, and
// whose upper layer is a sized tmpfs of the machine's. Everything but
// /workspace is writable there, by root inside the sandbox's user namespace
// (the sandbox's host uid, which owns the image's files), and gone when the
// machine stops: a suspension, a restart.

// DefaultRootBytes bounds what a machine writes outside /workspace (the
// overlay's upper tmpfs), when Config.RootBytes is 0.
const DefaultRootBytes = 2 << 30

// insideRoot is who commands run as on an image release.
const insideRoot = "0"

// rootOverlay is one machine's writable root.
type rootOverlay struct {
	dir    string // RunDir/ov-<id>
	merged string
}

const overlayPrefix = "ov-"

// imageRoot returns the image's root folder if release is built from
// packages by the configured cache, building it first if needed (before the
// start's own timeout: a first build takes a minute or more), else "".
func (d *Driver) imageRoot(ctx context.Context, name string) (string, error) {
	if !d.isImage(name) {
		return "", nil
	}
	if !d.root {
		return "", fmt.Errorf("local: release %s is an image, which needs a root server (it mounts each machine's overlay); a server that is not root can configure a host folder instead", name)
	}
	// A first build outlives the exec that asked for it: one that gives up
	// (its client went away) leaves the build to finish for the next.
	type result struct {
		root string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		root, err := d.cfg.Images.Root(context.WithoutCancel(ctx), name, nil)
		done <- result{root, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return "", fmt.Errorf("local: release %s: %w", name, r.err)
		}
		return r.root, nil
	case <-ctx.Done():
		return "", fmt.Errorf("local: release %s is being built (a first build takes a minute or two): %w", name, ctx.Err())
	}
}

// isImage reports whether release name is an image of the cache (one
// configured explicitly as a folder in Releases is not).
func (d *Driver) isImage(name string) bool {
	if d.cfg.Images == nil || !release.Known(name) {
		return false
	}
	_, folder := d.cfg.Releases[name]
	return !folder
}

// mountOverlay mounts a machine's root: a tmpfs of RootBytes holding the
// upper layer, and the overlay of it on the skeleton and the image.
func (d *Driver) mountOverlay(id string, skel *skeleton, image string) (*rootOverlay, error) {
	uid, gid := d.ids()
	if err := ownSkeleton(skel.dir, uid, gid); err != nil {
		return nil, fmt.Errorf("local: prepare the skeleton of %s: %w", image, err)
	}
	o := &rootOverlay{dir: filepath.Join(d.cfg.RunDir, overlayPrefix+id)}
	o.merged = filepath.Join(o.dir, "root")
	unmountOverlay(o.dir) // one a crash left
	upper := filepath.Join(o.dir, "upper")
	for _, p := range []string{o.dir, upper, o.merged} {
		if err := os.Mkdir(p, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(o.dir, "owner"), []byte(processIdentity(strconv.Itoa(os.Getpid()))), 0o600); err != nil {
		return nil, err
	}
	size := d.cfg.RootBytes
	if size == 0 {
		size = DefaultRootBytes
	}
	if err := unix.Mount("tmpfs", upper, "tmpfs", unix.MS_NODEV|unix.MS_NOSUID, "mode=0711,size="+strconv.FormatInt(size, 10)); err != nil {
		os.RemoveAll(o.dir)
		return nil, fmt.Errorf("local: mount the root's tmpfs: %w", err)
	}
	u, w := filepath.Join(upper, "u"), filepath.Join(upper, "w")
	err := errors.Join(os.Mkdir(u, 0o755), os.Mkdir(w, 0o700), os.Chown(u, uid, gid))
	if err == nil {
		opts := "lowerdir=" + escapeOverlay(skel.dir) + ":" + escapeOverlay(image) + ",upperdir=" + escapeOverlay(u) + ",workdir=" + escapeOverlay(w)
		err = unix.Mount("overlay", o.merged, "overlay", unix.MS_NODEV|unix.MS_NOSUID, opts)
	}
	if err != nil {
		o.unmount()
		return nil, fmt.Errorf("local: mount the root overlay: %w", err)
	}
	return o, nil
}

// escapeOverlay escapes the characters overlayfs splits its options on.
func escapeOverlay(p string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`).Replace(p)
}

// unmount drops the overlay and its tmpfs (and with it all the machine
// wrote outside /workspace). A nil overlay does nothing.
func (o *rootOverlay) unmount() error {
	if o == nil {
		return nil
	}
	return unmountOverlay(o.dir)
}

func unmountOverlay(dir string) error {
	var errs []error
	for _, p := range []string{filepath.Join(dir, "root"), filepath.Join(dir, "upper")} {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeStaleOverlays unmounts the roots a crashed server left mounted.
// The run folder is shared by every server (and test) on the machine, so
// only roots whose server is gone are removed: each names its server's pid
// and start time in its owner file.
func removeStaleOverlays(runDir string) {
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		dir := filepath.Join(runDir, e.Name())
		if !strings.HasPrefix(e.Name(), overlayPrefix) || !e.IsDir() {
			continue
		}
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		if f := strings.Fields(string(owner)); err == nil && len(f) == 2 && string(owner) == processIdentity(f[0]) {
			continue // its server still runs
		}
		unmountOverlay(dir)
	}
}

// processIdentity is "<pid> <start time>" of a live process, else "".
func processIdentity(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	// The start time is field 22; fields after the command (in
	// parentheses, which may hold spaces) start at field 3.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return pid + " " + fields[19]
}

// ownSkeleton gives an image skeleton's files to the sandbox ids (root
// inside), so root inside may change /etc as on any Debian system (in the
// overlay only). The agent stays the server's: a sandbox cannot change it.
func ownSkeleton(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".subako" || strings.HasPrefix(rel, ".subako/") {
			if e.IsDir() && rel != ".subako" {
				return fs.SkipDir
			}
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if int(st.Uid) == uid && int(st.Gid) == gid {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
}

// imageArgs replaces a host release's read-only root with the machine's
// overlay, writable, and runs the sandbox as root of its user namespace.
func imageArgs(args []string, fds *fdTable, o *rootOverlay) ([]string, error) {
	fd, err := fds.open(o.merged)
	if err != nil {
		return nil, fmt.Errorf("sandbox root: %w", err)
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--uid" || args[i] == "--gid":
			out = append(out, args[i], insideRoot)
			i++
		case args[i] == "--ro-bind-fd" && i+2 < len(args) && args[i+2] == "/":
			out = append(out, "--bind-fd", fd, "/")
			i += 2
		case args[i] == "--ro-bind-fd" && i+2 < len(args) && args[i+2] == "/usr":
			i += 2 // in the overlay
		case args[i] == "USER" && i > 0 && args[i-1] == "--setenv":
			out = append(out, "USER", "root")
			i++
		case args[i] == "LOGNAME" && i > 0 && args[i-1] == "--setenv":
			out = append(out, "LOGNAME", "root")
			i++
		default:
			out = append(out, args[i])
		}
	}
	return out, nil
}
