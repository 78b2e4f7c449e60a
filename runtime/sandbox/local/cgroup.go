package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// errCgroupsUnavailable means the cgroup tree cannot be written (the server
// is not root, or cgroups are mounted read-only): machines run without limits.
var errCgroupsUnavailable = errors.New("cgroups not writable")

// cgroups are one machine's cgroup folders: one per controller on v1
// (memory, pids, cpu under <root>/<controller>/subako/<id>), one on v2
// (<root>/subako/<id>). A nil *cgroups means "no limits" and is safe to use.
type cgroups struct {
	dirs []string
	// oomFile is the file counting the machine's OOM kills (v1
	// memory.oom_control, v2 memory.events), or "" without a memory limit.
	oomFile string
	// oom holds oomFile open for the machine's life: every exec reads it
	// twice, and a read at offset 0 of a kept descriptor costs a fifth of an
	// open, read and close after an idle pause (16 against 70 µs).
	oom keptFile
}

type limitFile struct{ controller, file, value string }

func isV2(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

func newCgroups(root, id string, lim sandbox.Limits) (*cgroups, error) {
	if lim == (sandbox.Limits{}) {
		return nil, nil
	}
	v2 := isV2(root)
	files := limitFiles(root, lim, v2)
	if v2 {
		if err := enableV2Controllers(root); err != nil {
			return nil, err
		}
	}
	cg := &cgroups{}
	for _, f := range files {
		dir := filepath.Join(root, f.controller, "subako", id)
		if v2 {
			dir = filepath.Join(root, "subako", id)
		}
		if !containsDir(cg.dirs, dir) {
			// Only ever create folders inside a mounted cgroup hierarchy.
			if _, err := os.Stat(filepath.Join(root, f.controller, "cgroup.procs")); err != nil {
				cg.remove()
				return nil, fmt.Errorf("%w: no %q controller at %s", errCgroupsUnavailable, f.controller, root)
			}
			if err := mkdirCgroup(dir); err != nil {
				cg.remove()
				return nil, unavailable(err)
			}
			cg.dirs = append(cg.dirs, dir)
		}
		switch f.file {
		case "memory.limit_in_bytes":
			cg.oomFile = filepath.Join(dir, "memory.oom_control")
		case "memory.max":
			cg.oomFile = filepath.Join(dir, "memory.events")
		}
		if err := writeCgroupFile(filepath.Join(dir, f.file), f.value); err != nil {
			cg.remove()
			return nil, fmt.Errorf("local: cgroup %s: write %s=%s: %w", dir, f.file, f.value, err)
		}
	}
	if cg.oomFile != "" {
		cg.oom.open(cg.oomFile) // if it fails, each read opens the file
	}
	return cg, nil
}

// mkdirCgroup makes a machine's cgroup folder, and its parent (subako) the
// first time; one that exists is reused, as MkdirAll would.
func mkdirCgroup(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// writeCgroupFile writes one cgroup control file with plain system calls:
// os.WriteFile also registers the file with the runtime's poller (cgroup
// files are pollable) and removes it again, more than doubling the calls of
// the dozen writes a start makes.
func writeCgroupFile(path, value string) error {
	fd, err := ignoringEINTR(func() (int, error) {
		return unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := ignoringEINTR(func() (int, error) { return unix.Write(fd, []byte(value)) }); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// readCgroupFile reads a small cgroup file, as writeCgroupFile writes one.
func readCgroupFile(path string) ([]byte, error) {
	fd, err := ignoringEINTR(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		n, err := ignoringEINTR(func() (int, error) { return unix.Read(fd, buf[len(buf):cap(buf)]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// keptFile is a cgroup file held open and read again from its start: the
// kernel renders a cgroup file anew at each read from offset 0. Reads and
// the close may race (an exec's last read and the machine's stop); the lock
// keeps a read from using a descriptor number closed and reused meanwhile.
type keptFile struct {
	mu   sync.RWMutex
	fd   int
	held bool
}

func (k *keptFile) open(path string) {
	fd, err := ignoringEINTR(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return
	}
	k.mu.Lock()
	k.fd, k.held = fd, true
	k.mu.Unlock()
}

// read reads the whole file into buf's room (a cgroup's counters file is
// under a few hundred bytes); ok is false once closed or never opened.
func (k *keptFile) read(buf []byte) (n int, ok bool, err error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if !k.held {
		return 0, false, nil
	}
	n, err = ignoringEINTR(func() (int, error) { return unix.Pread(k.fd, buf, 0) })
	return n, true, err
}

func (k *keptFile) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held {
		unix.Close(k.fd)
		k.held = false
	}
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}

func limitFiles(root string, lim sandbox.Limits, v2 bool) []limitFile {
	var files []limitFile
	mem, pids := strconv.FormatInt(lim.MemoryBytes, 10), strconv.FormatInt(lim.Pids, 10)
	period := int64(100000)
	quota := strconv.FormatInt(int64(lim.CPUPercent)*period/100, 10)
	if v2 {
		if lim.MemoryBytes > 0 {
			files = append(files, limitFile{"", "memory.max", mem}, limitFile{"", "memory.swap.max", "0"})
		}
		if lim.Pids > 0 {
			files = append(files, limitFile{"", "pids.max", pids})
		}
		if lim.CPUPercent > 0 {
			files = append(files, limitFile{"", "cpu.max", quota + " " + strconv.FormatInt(period, 10)})
		}
		return files
	}
	if lim.MemoryBytes > 0 {
		files = append(files, limitFile{"memory", "memory.limit_in_bytes", mem})
	}
	if lim.Pids > 0 {
		files = append(files, limitFile{"pids", "pids.max", pids})
	}
	if lim.CPUPercent > 0 {
		files = append(files, limitFile{"cpu", "cpu.cfs_period_us", strconv.FormatInt(period, 10)},
			limitFile{"cpu", "cpu.cfs_quota_us", quota})
	}
	return files
}

// enableV2Controllers delegates memory, pids and cpu to <root>/subako.
func enableV2Controllers(root string) error {
	parent := filepath.Join(root, "subako")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return unavailable(err)
	}
	for _, dir := range []string{root, parent} {
		err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
		if err != nil {
			return unavailable(err)
		}
	}
	return nil
}

func unavailable(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %v", errCgroupsUnavailable, err)
	}
	return fmt.Errorf("local: cgroups: %w", err)
}

func containsDir(dirs []string, dir string) bool {
	for _, d := range dirs {
		if d == dir {
			return true
		}
	}
	return false
}

// add moves pid (and so everything it will start) into the cgroups.
func (c *cgroups) add(pid int) error {
	if c == nil {
		return nil
	}
	for _, dir := range c.dirs {
		if err := writeCgroupFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("local: cgroup %s: add pid %d: %w", dir, pid, err)
		}
	}
	return nil
}

// remove deletes the folders; the kernel refuses while a process is still
// exiting, so it retries briefly.
func (c *cgroups) remove() error {
	if c == nil {
		return nil
	}
	c.oom.close()
	var last error
	for _, dir := range c.dirs {
		if err := removeCgroupTree(dir); err != nil {
			last = err
		}
	}
	if last != nil {
		return fmt.Errorf("local: remove cgroup: %w", last)
	}
	return nil
}

// removeCgroupTree removes dir and the cgroups below it (a machine's exec
// slots), deepest first.
func removeCgroupTree(dir string) error {
	// At a machine's stop every process is gone: the folder and its exec
	// slots, by name, go without listing them (a listing of a memory cgroup
	// reads some thirty entries).
	err := syscall.Rmdir(dir)
	if errors.Is(err, syscall.EBUSY) {
		for i := range execSlots {
			syscall.Rmdir(filepath.Join(dir, "e"+strconv.Itoa(i)))
		}
		err = syscall.Rmdir(dir)
	}
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	for try := 0; try < 50; try++ {
		err = syscall.Rmdir(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// removeStaleCgroups clears folders left by a server that died: empty
// cgroups can be removed, busy ones are refused by the kernel and kept.
func removeStaleCgroups(root string) {
	parents := []string{filepath.Join(root, "subako")}
	if !isV2(root) {
		parents = []string{filepath.Join(root, "memory/subako"), filepath.Join(root, "pids/subako"), filepath.Join(root, "cpu/subako")}
	}
	for _, parent := range parents {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			info, err := e.Info()
			// A young folder may belong to a sandbox another driver is
			// starting right now, before its first process joined.
			if err != nil || !e.IsDir() || strings.HasPrefix(e.Name(), "cgroup.") || time.Since(info.ModTime()) < time.Minute {
				continue
			}
			removeStaleCgroup(filepath.Join(parent, e.Name()))
		}
	}
}

// removeStaleCgroup removes an abandoned machine's cgroup and its exec
// slots, without waiting: a busy one is refused by the kernel and kept.
func removeStaleCgroup(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeStaleCgroup(filepath.Join(dir, e.Name()))
		}
	}
	syscall.Rmdir(dir)
}
