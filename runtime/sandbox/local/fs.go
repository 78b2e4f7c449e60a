package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// chownTree gives the workspace to the sandbox's host uid, so files restored
// by the server (as root) are writable inside. Lchown: a symlink in the
// workspace must never make the server change a file outside it.
func chownTree(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
	if err == nil {
		// Only the sandbox's own user needs it; other host users do not.
		err = os.Chmod(dir, 0o700)
	}
	if err != nil {
		return fmt.Errorf("local: give workspace %s to uid %d: %w", dir, uid, err)
	}
	return nil
}

// checkReachable reports a folder bwrap could not open: bwrap resolves every
// bind source by path as the sandbox uid (even with --bind-fd), so each
// parent folder must be searchable by that uid.
func checkReachable(p string, uid, gid int) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("local: %s: %w", dir, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		need := os.FileMode(0o001)
		switch {
		case int(st.Uid) == uid:
			need = 0o100
		case int(st.Gid) == gid:
			need = 0o010
		}
		if fi.Mode().Perm()&need == 0 {
			return fmt.Errorf("local: %s is not reachable by the sandbox uid %d: %s has mode %04o (chmod o+x %s, or keep the data folder elsewhere)", p, uid, dir, fi.Mode().Perm(), dir)
		}
		if dir == "/" {
			return nil
		}
	}
}

// prepareRunDir creates the driver's own folder: owned by the server,
// searchable but not listable by the sandbox uid.
func prepareRunDir(dir string) error {
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("local: create run folder %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("local: run folder %s: %w", dir, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("local: run folder %s must be a folder owned by uid %d", dir, os.Geteuid())
	}
	return os.Chmod(dir, 0o711)
}

// stageAgent puts a copy of the agent executable in the run folder, where the
// sandbox uid can reach it (a go test binary lives in a 0700 folder). The name
// carries the source's identity, so an unchanged binary is staged once.
func stageAgent(runDir, src string) (string, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("local: agent %s: %w", src, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	dst := filepath.Join(runDir, fmt.Sprintf("agent-%x-%x-%x-%x", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()))
	if _, err := os.Stat(dst); err == nil {
		now := time.Now()
		return dst, os.Chtimes(dst, now, now) // in use: keep it from pruning
	}
	if err := os.Link(src, dst); err == nil {
		return dst, os.Chmod(dst, 0o755)
	}
	if err := copyFile(src, dst); err != nil {
		return "", fmt.Errorf("local: stage agent %s: %w", src, err)
	}
	return dst, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".agent-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// pruneStagedAgents removes copies staged by older binaries. A copy in use
// by another server is refreshed when that server starts, and re-staged by
// Start if it went missing.
func pruneStagedAgents(runDir, keep string) {
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		p := filepath.Join(runDir, e.Name())
		info, err := e.Info()
		if err != nil || p == keep || !strings.HasPrefix(e.Name(), "agent-") || time.Since(info.ModTime()) < time.Hour {
			continue
		}
		os.Remove(p)
	}
}
