package fn

import (
	"io/fs"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/subako/subako/runtime/volume"
)

// VolumeGuestPath is where a call sees its session's volume.
const VolumeGuestPath = "/volume"

// VolumeMount gives a call its session's volume, a folder on this machine,
// at /volume: read-only, or read and write within the volume's limits.
type VolumeMount struct {
	Dir   string
	Write bool
	// MaxFileBytes bounds one file; MaxNewBytes and MaxNewFiles what the
	// call may add to the volume (its limits less what it holds). A write
	// past them fails in the guest with EFBIG or ENOSPC and leaves the
	// file as it was before that write.
	MaxFileBytes, MaxNewBytes int64
	MaxNewFiles               int
}

// VolumeAccess is one file a call read, wrote or deleted in its volume.
type VolumeAccess struct {
	Path string `json:"path"`
	Op   string `json:"op"` // read, write, delete
}

// Ops of a VolumeAccess.
const (
	VolumeRead   = "read"
	VolumeWrite  = "write"
	VolumeDelete = "delete"
)

// maxVolumeExtraDirs is how many more folders than files a call may make.
const maxVolumeExtraDirs = 100

// maxVolumeAccesses bounds what a call's list remembers.
const maxVolumeAccesses = 1000

// volumeFS is the guest's view of a volume: the folder, never a link (links
// can be neither made nor followed), names checked like the API's, sizes
// bounded, and every file the guest opens, writes or removes noted.
type volumeFS struct {
	// Every method is its own: a path reaches inner only as beneath
	// makes it, relative to the host's /.
	experimentalsys.UnimplementedFS
	inner experimentalsys.FS
	m     VolumeMount

	mu       sync.Mutex
	seen     map[VolumeAccess]bool
	accesses []VolumeAccess
	newBytes int64
	newFiles int
	newDirs  int // folders made: at most MaxNewFiles+maxVolumeExtraDirs
}

func newVolumeFS(m VolumeMount) *volumeFS {
	var inner experimentalsys.FS = sysfs.DirFS("/")
	if !m.Write {
		inner = &sysfs.ReadFS{FS: inner}
	}
	return &volumeFS{inner: inner, m: m, seen: map[VolumeAccess]bool{}}
}

func (v *volumeFS) config() wazero.FSConfig {
	return wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(v, VolumeGuestPath)
}

func (v *volumeFS) note(path, op string) {
	path = strings.TrimPrefix(path, "/")
	if path == "" || path == "." {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	a := VolumeAccess{Path: path, Op: op}
	if v.seen[a] || len(v.accesses) >= maxVolumeAccesses {
		return
	}
	v.seen[a] = true
	v.accesses = append(v.accesses, a)
}

// Accesses lists what the call touched, in order of first touch.
func (v *volumeFS) Accesses() []VolumeAccess {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]VolumeAccess(nil), v.accesses...)
}

// isLink reports whether path or any folder on the way to it is a link.
// None can be made through the API or a function; this keeps one put there
// by other means (a person on the host) from leading a call out.
func (v *volumeFS) isLink(path string) bool {
	p := strings.Trim(path, "/")
	for p != "" && p != "." {
		if st, errno := v.Lstat(p); errno == 0 && st.Mode&fs.ModeSymlink != 0 {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return false
}

func newName(path string) experimentalsys.Errno {
	if volume.CheckPath(strings.TrimPrefix(path, "/")) != nil {
		return experimentalsys.EINVAL
	}
	return 0
}

func (v *volumeFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if v.isLink(path) {
		return nil, experimentalsys.ELOOP
	}
	writes := flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) != 0 || flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC|experimentalsys.O_APPEND) != 0
	created := false
	if writes && !v.m.Write {
		return nil, errReadOnly
	}
	if writes {
		if _, errno := v.Lstat(path); errno == experimentalsys.ENOENT && flag&experimentalsys.O_CREAT != 0 {
			if e := newName(path); e != 0 {
				return nil, e
			}
			v.mu.Lock()
			full := v.newFiles >= v.m.MaxNewFiles
			if !full {
				v.newFiles++
			}
			v.mu.Unlock()
			if full {
				return nil, errVolumeFull
			}
			created = true
		}
	}
	full, done, errno := v.beneath(path)
	var f experimentalsys.File
	if errno == 0 {
		nofollow := experimentalsys.O_NOFOLLOW
		if isFolderItself(full) {
			nofollow = 0 // its /proc/self/fd entry is a link by nature
		}
		// O_NONBLOCK while opening: a fifo a session sandbox left in the
		// volume would make the open wait for a writer forever, past the
		// call's deadline (a blocked system call is not interrupted).
		if f, errno = v.inner.OpenFile(full, flag|nofollow|experimentalsys.O_NONBLOCK, perm); errno != 0 {
			done()
		} else if st, e := f.Stat(); e != 0 || !(st.Mode.IsRegular() || st.Mode.IsDir()) {
			f.Close()
			done()
			if errno = e; errno == 0 {
				errno = experimentalsys.ENOTSUP // not a plain file or folder
			}
		} else {
			if pf, ok := f.(experimentalsys.PollableFile); ok && flag&experimentalsys.O_NONBLOCK == 0 {
				pf.SetNonblock(false)
			}
			f = &heldFile{File: f, done: done}
		}
	}
	if errno != 0 {
		if created {
			v.mu.Lock()
			v.newFiles--
			v.mu.Unlock()
		}
		return nil, errno
	}
	if dir, _ := f.IsDir(); dir {
		return f, 0
	}
	if !writes || !v.m.Write {
		v.note(path, VolumeRead)
		return f, 0
	}
	v.note(path, VolumeWrite)
	return &volumeFile{File: f, fs: v}, 0
}

func (v *volumeFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if !v.m.Write {
		return errReadOnly
	}
	if e := newName(path); e != 0 {
		return e
	}
	if v.isLink(path) {
		return experimentalsys.ELOOP
	}
	// Folders are no files, but each is an inode on the host's disk: at
	// most 100 more than the files the call may make, or a loop fills the
	// disk's inodes before the deadline.
	v.mu.Lock()
	full := v.newDirs >= v.m.MaxNewFiles+maxVolumeExtraDirs
	if !full {
		v.newDirs++
	}
	v.mu.Unlock()
	if full {
		return errVolumeFull
	}
	p, done, errno := v.beneath(path)
	if errno != 0 {
		return errno
	}
	defer done()
	return v.inner.Mkdir(p, perm)
}

func (v *volumeFS) Rename(from, to string) experimentalsys.Errno {
	if !v.m.Write {
		return errReadOnly
	}
	if e := newName(to); e != 0 {
		return e
	}
	if v.isLink(from) || v.isLink(to) {
		return experimentalsys.ELOOP
	}
	st, _ := v.Lstat(from)
	fromFull, fromDone, errno := v.beneath(from)
	if errno != 0 {
		return errno
	}
	defer fromDone()
	toFull, toDone, errno := v.beneath(to)
	if errno != 0 {
		return errno
	}
	defer toDone()
	errno = v.inner.Rename(fromFull, toFull)
	if errno == 0 {
		if st.Mode.IsDir() {
			// A folder moved: its files are noted by the sync that
			// follows the call, which walks the volume.
			v.note(from+"/", VolumeDelete)
			v.note(to+"/", VolumeWrite)
		} else {
			v.note(from, VolumeDelete)
			v.note(to, VolumeWrite)
		}
	}
	return errno
}

func (v *volumeFS) Unlink(path string) experimentalsys.Errno {
	if !v.m.Write {
		return errReadOnly
	}
	if v.isLink(path) {
		return experimentalsys.ELOOP
	}
	full, done, errno := v.beneath(path)
	if errno != 0 {
		return errno
	}
	defer done()
	errno = v.inner.Unlink(full)
	if errno == 0 {
		v.note(path, VolumeDelete)
	}
	return errno
}

func (v *volumeFS) Rmdir(path string) experimentalsys.Errno {
	if v.isLink(path) {
		return experimentalsys.ELOOP
	}
	full, done, errno := v.beneath(path)
	if errno != 0 {
		return errno
	}
	defer done()
	return v.inner.Rmdir(full)
}

func (v *volumeFS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	if v.isLink(path) {
		return sys.Stat_t{}, experimentalsys.ELOOP
	}
	full, done, errno := v.beneath(path)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	defer done()
	return v.inner.Stat(full)
}

// Link and Symlink are refused: a link could lead out of the volume, or
// make one file two.
func (v *volumeFS) Link(oldPath, newPath string) experimentalsys.Errno { return experimentalsys.EPERM }
func (v *volumeFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// volumeFile bounds a writable file's growth: past the file limit a write
// fails with EFBIG, past the volume's room with ENOSPC, and the file is cut
// back to its size before that write.
type volumeFile struct {
	experimentalsys.File
	fs *volumeFS
}

func (f *volumeFile) size() int64 {
	st, errno := f.File.Stat()
	if errno != 0 {
		return 0
	}
	return st.Size
}

func (f *volumeFile) grow(before int64, n int, errno experimentalsys.Errno) (int, experimentalsys.Errno) {
	after := f.size()
	if after > f.fs.m.MaxFileBytes {
		f.File.Truncate(before)
		return 0, errVolumeFull
	}
	v := f.fs
	v.mu.Lock()
	over := v.newBytes+(after-before) > v.m.MaxNewBytes
	if !over {
		v.newBytes += after - before
	}
	v.mu.Unlock()
	if over {
		f.File.Truncate(before)
		return 0, errVolumeFull
	}
	return n, errno
}

func (f *volumeFile) Write(buf []byte) (int, experimentalsys.Errno) {
	before := f.size()
	n, errno := f.File.Write(buf)
	return f.grow(before, n, errno)
}

func (f *volumeFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	before := f.size()
	n, errno := f.File.Pwrite(buf, off)
	return f.grow(before, n, errno)
}

func (f *volumeFile) Truncate(size int64) experimentalsys.Errno {
	before := f.size()
	errno := f.File.Truncate(size)
	if errno != 0 {
		return errno
	}
	_, errno = f.grow(before, 0, 0)
	return errno
}

// errVolumeFull fails a write past the volume's limits. WASI as wazero
// implements it has no ENOSPC nor EFBIG; EPERM says the write was refused.
const errVolumeFull = experimentalsys.EPERM

// errReadOnly refuses a change to a volume granted read only. EROFS would
// say it better, but Go's wasip1 runtime reports it as "not implemented";
// EACCES reads "permission denied".
const errReadOnly = experimentalsys.EACCES
