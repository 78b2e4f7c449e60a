package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Stamp is what a scan notes of one regular file.
type Stamp struct {
	Size int64
	Mod  time.Time
	Ino  uint64
}

// Scan is a volume folder as a scan found it.
type Scan struct {
	Files map[string]Stamp
	// Removed lists what a cleaning scan took out: links, special files,
	// files with a second name, names CheckPath refuses.
	Removed []string
	Entries int
	// Stopped says why the scan ended before the whole folder ("" when it
	// saw everything): it stops after maxEntries entries or maxTime.
	Stopped string
}

// ScanDir walks dir through an os.Root, never following a link: whatever a
// sandbox writing the folder makes in it (a link to /etc, a folder swapped
// for a link mid-walk), nothing outside dir is read, changed or removed.
// With clean, links, fifos, sockets, devices, files with more than one name
// and names the API would refuse are removed. visit, if set, sees every
// entry kept (the root "." included) with the root to act on it.
func ScanDir(dir string, maxEntries int, maxTime time.Duration, clean bool, visit func(r *os.Root, rel string, st *syscall.Stat_t)) (Scan, error) {
	out := Scan{Files: map[string]Stamp{}}
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("volume: %w", err)
	}
	defer r.Close()
	deadline := time.Now().Add(maxTime)
	err = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // gone or swapped while walking: skipped, never followed
		}
		if p != "." {
			out.Entries++
			if out.Entries > maxEntries {
				out.Stopped = fmt.Sprintf("the scan stopped after %d entries", maxEntries)
				return fs.SkipAll
			}
			if out.Entries%64 == 0 && time.Now().After(deadline) {
				out.Stopped = fmt.Sprintf("the scan stopped after %s", maxTime)
				return fs.SkipAll
			}
		}
		info, err := r.Lstat(p)
		if err != nil {
			return nil
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		if p != "." && clean {
			bad := CheckPath(p) != nil || !(info.Mode().IsRegular() || info.IsDir()) ||
				(info.Mode().IsRegular() && st != nil && st.Nlink > 1)
			if bad {
				if info.IsDir() {
					r.RemoveAll(p)
				} else {
					r.Remove(p)
				}
				out.Removed = append(out.Removed, p)
				if info.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if visit != nil && st != nil {
			visit(r, p, st)
		}
		if info.Mode().IsRegular() {
			s := Stamp{Size: info.Size(), Mod: info.ModTime()}
			if st != nil {
				s.Ino = st.Ino
			}
			out.Files[p] = s
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("volume: scan: %w", err)
	}
	return out, nil
}

// GiveTo makes the volume folder dir and what it holds owned by uid:gid (a
// sandbox's host user, so it reads and, if bound read-write, writes them),
// through an os.Root and never through a link; bounded like ScanDir.
func GiveTo(dir string, uid, gid, maxEntries int, maxTime time.Duration) error {
	_, err := ScanDir(dir, maxEntries, maxTime, false, func(r *os.Root, rel string, st *syscall.Stat_t) {
		if int(st.Uid) != uid || int(st.Gid) != gid {
			r.Lchown(rel, uid, gid)
		}
	})
	return err
}

// Remove removes one file of a local volume folder through an os.Root.
func Remove(dir, rel string) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Remove(rel)
}
