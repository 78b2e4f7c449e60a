package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DefaultMinFreeDisk is --min-free-disk's default: below it no sandbox
// starts and no archive is written, so the database and the audit records
// still have room.
const DefaultMinFreeDisk int64 = 1 << 30

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

// DiskFullError refuses work that writes to the data disk (a start, an
// archive, an upload) once its free space is under Config.MinFreeDisk.
type DiskFullError struct {
	What      string // "start a sandbox", "write an archive"
	Free, Min int64
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("cannot %s: the server's data disk has %d MiB free, under its %d MiB floor (--min-free-disk)",
		e.What, e.Free>>20, e.Min>>20)
}

// checkFreeDisk returns a *DiskFullError when the disk holding the sandbox
// folders has less than MinFreeDisk free (0: DefaultMinFreeDisk; negative:
// no floor).
func (m *Manager) checkFreeDisk(what string) error {
	min := m.cfg.MinFreeDisk
	if min < 0 {
		return nil
	}
	if min == 0 {
		min = DefaultMinFreeDisk
	}
	free, err := FreeBytes(m.cfg.Dir)
	if err != nil {
		return err
	}
	if free < min {
		return &DiskFullError{What: what, Free: free, Min: min}
	}
	return nil
}
