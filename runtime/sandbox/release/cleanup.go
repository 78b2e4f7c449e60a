package release

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// removeBuild removes the folder of a build that did not finish. mmdebstrap
// in root mode mounts the host's /dev/shm, device files, a proc and a sysfs
// into the root it builds, and unmounts them only if it ends on its own: one
// killed halfway (a timeout, ^C, kill -9 of the server) leaves them mounted.
// os.RemoveAll would then delete through them (the host's /dev/shm), so
// every mount in the folder is detached first, never following a link; if
// one cannot be, the folder is left as it is and the error says why.
func removeBuild(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		for range 64 { // mounts stacked on one another
			err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
				return nil // not a mount point (any more)
			}
			if err != nil {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		}
		return fmt.Errorf("unmount %s: still mounted after 64 unmounts", p)
	})
	if err != nil {
		return fmt.Errorf("release: the unfinished build %s is left as it is: %w", dir, err)
	}
	return os.RemoveAll(dir)
}

// removeUnfinished removes what builds of release name killed halfway left
// in the cache (their folders, and what is still mounted in them). The
// caller holds the release's lock, so no build of it is running.
func (c *Cache) removeUnfinished(name string, progress io.Writer) {
	for _, pattern := range []string{"." + name + "-build-*", "." + name + "-uv-*"} {
		left, _ := filepath.Glob(filepath.Join(c.Dir, pattern))
		for _, dir := range left {
			if err := removeBuild(dir); err != nil {
				fmt.Fprintf(progress, "release %s: %v\n", name, err)
				continue
			}
			fmt.Fprintf(progress, "release %s: removed %s, left by a build that did not finish\n", name, filepath.Base(dir))
		}
	}
}
