package fn

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// beneath resolves a guest path below the volume without following a link
// on the way: the folder that holds its last name is opened through an
// os.Root, and the path handed to the host is that open folder's
// /proc/self/fd entry and the last name. A folder a session sandbox's
// process swaps for a link to / between a check and the system call (the
// sandbox binds the same folder read-write, and its processes outlive an
// exec) then leads nowhere: the server never resolves the guest's folders
// by name. done closes the folder (after the file opened in it, if any).
func (v *volumeFS) beneath(p string) (full string, done func(), errno experimentalsys.Errno) {
	p = strings.Trim(p, "/")
	dir, base := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if base == "." || base == ".." { // the folder itself, resolved by the Root
		dir, base = p, ""
	}
	if dir == "" {
		dir = "."
	}
	r, err := os.OpenRoot(v.m.Dir)
	if err != nil {
		return "", nil, experimentalsys.UnwrapOSError(err)
	}
	defer r.Close()
	d, err := r.Open(dir)
	if err != nil {
		if e := experimentalsys.UnwrapOSError(err); e != experimentalsys.EIO {
			return "", nil, e
		}
		return "", nil, experimentalsys.ELOOP // escapes the volume
	}
	if st, err := d.Stat(); err != nil || !st.IsDir() {
		d.Close()
		return "", nil, experimentalsys.ENOTDIR
	}
	full = fmt.Sprintf("proc/self/fd/%d", d.Fd())
	if base != "" {
		full += "/" + base
	}
	return full, func() { d.Close() }, 0
}

// heldFile keeps the folder a file was opened in open while the file is
// (wazero reopens a folder by its path to read it again).
type heldFile struct {
	experimentalsys.File
	done func()
}

func (f *heldFile) Close() experimentalsys.Errno {
	errno := f.File.Close()
	f.done()
	return errno
}

func (v *volumeFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	full, done, errno := v.beneath(p)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	defer done()
	if isFolderItself(full) { // its /proc/self/fd entry is a link by nature
		return v.inner.Stat(full)
	}
	return v.inner.Lstat(full)
}

// isFolderItself says whether a path of beneath is an open folder's own
// /proc/self/fd entry (no last name below it).
func isFolderItself(full string) bool {
	return !strings.Contains(strings.TrimPrefix(full, "proc/self/fd/"), "/")
}

func (v *volumeFS) Readlink(p string) (string, experimentalsys.Errno) {
	return "", experimentalsys.EINVAL // a volume holds no links
}

// Chmod is not part of WASI preview 1; a volume's modes are the server's.
func (v *volumeFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return experimentalsys.ENOSYS
}

func (v *volumeFS) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	if !v.m.Write {
		return errReadOnly
	}
	full, done, errno := v.beneath(p)
	if errno != 0 {
		return errno
	}
	defer done()
	if st, errno := v.Lstat(p); errno != 0 || st.Mode&fs.ModeSymlink != 0 {
		if errno == 0 {
			errno = experimentalsys.ELOOP
		}
		return errno
	}
	return v.inner.Utimens(full, atim, mtim)
}
