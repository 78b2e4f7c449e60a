package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeBytes is the space left to an unprivileged writer on the file system
// holding dir (root's reserved blocks are not counted: the server must stop
// before the disk is full, not when only root can still write).
func FreeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("sandbox: free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
