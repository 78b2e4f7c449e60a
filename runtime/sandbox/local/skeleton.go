package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subako/subako/runtime/sandbox"
)

// A machine's root is a skeleton folder, prepared once per release, network
// mode and agent in the run folder and bound read-only as / in one mount:
// the generated /etc (with copies of the release's public etc files and its
// /etc/alternatives links), the release's top-level links (bin -> usr/bin…),
// the agent at /.subako/agent, and empty folders where a start mounts /usr,
// /proc, /dev, /tmp, /workspace and the rest. A start then makes a handful
// of mounts where it made one per /etc file, one per release file and a
// symlink per alternative (about 20 binds and 400 links).
//
// The skeleton's name carries a fingerprint of every release file it copies,
// so a changed release (new certificates, a package that adds an
// alternative) gets a new skeleton at the next start.
const skeletonVersion = "2"

// skeleton is one prepared root.
type skeleton struct {
	dir string
	// dirs are release top-level entries that are folders, not links
	// (a release without merged /usr): each is bound on its own.
	dirs []string
}

type skeletons struct {
	mu    sync.Mutex
	ready map[string]*skeleton // by folder name
}

// skeletonFor returns the skeleton of a release root and network mode for
// the staged agent, making it if needed.
//
// With volume the root has a /volume mount point (the session's volume is
// bound there); without, a sandbox has no /volume at all.
func (d *Driver) skeletonFor(releaseRoot, network, agent string, volume bool) (*skeleton, error) {
	name, err := skeletonName(releaseRoot, network, agent)
	if volume {
		name += "-volume"
	}
	if err != nil {
		return nil, err
	}
	d.skel.mu.Lock()
	defer d.skel.mu.Unlock()
	if s, ok := d.skel.ready[name]; ok {
		if _, err := os.Stat(filepath.Join(s.dir, agentPath)); err == nil {
			return s, nil
		}
		delete(d.skel.ready, name) // the run folder was cleaned
	}
	s, err := makeSkeleton(d.cfg.RunDir, name, releaseRoot, network, agent, volume)
	if err != nil {
		return nil, fmt.Errorf("local: prepare the sandbox root of release %s: %w", releaseRoot, err)
	}
	if d.skel.ready == nil {
		d.skel.ready = map[string]*skeleton{}
	}
	d.skel.ready[name] = s
	return s, nil
}

// skeletonName fingerprints what a skeleton is made of.
func skeletonName(root, network, agent string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", skeletonVersion, root, network, agent)
	stamp := func(p string) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			fmt.Fprintf(h, "%s -\x00", p)
			return
		}
		fmt.Fprintf(h, "%s %d %d %d %d %d\x00", p, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Mode)
	}
	for _, name := range releaseTop {
		stamp(filepath.Join(root, name))
	}
	for _, name := range releaseEtc {
		stamp(filepath.Join(root, "etc", name))
	}
	stamp(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	stamp(filepath.Join(root, "etc/alternatives"))
	stamp(filepath.Join(root, "usr/lib/os-release"))
	return "root-" + hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// makeSkeleton builds the skeleton in a temporary folder and renames it into
// place, so a skeleton that exists is complete.
func makeSkeleton(runDir, name, root, network, agent string, volume bool) (*skeleton, error) {
	dir := filepath.Join(runDir, name)
	s := &skeleton{dir: dir}
	for _, top := range releaseTop {
		if fi, err := os.Lstat(filepath.Join(root, top)); err == nil && fi.IsDir() {
			s.dirs = append(s.dirs, top)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, agentPath)); err == nil && fi.Mode().IsRegular() {
		return s, nil
	}
	tmp, err := os.MkdirTemp(runDir, ".root-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := fillSkeleton(tmp, root, network, agent, volume); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Made meanwhile by another driver in the same run folder.
		if _, serr := os.Stat(filepath.Join(dir, agentPath)); serr == nil {
			return s, nil
		}
		return nil, err
	}
	return s, nil
}

func fillSkeleton(dst, root, network, agent string, volume bool) error {
	mkdir := func(p string) error { return os.MkdirAll(filepath.Join(dst, p), 0o755) }
	for _, p := range []string{"usr", "proc", "dev", "tmp", "workspace", "skills", "etc/ssl", "etc/alternatives", strings.TrimPrefix(sandbox.ExecPidsDir, "/"), strings.TrimPrefix(sandbox.EgressDir, "/")} {
		if err := mkdir(p); err != nil {
			return err
		}
	}
	if volume {
		if err := mkdir("volume"); err != nil {
			return err
		}
	}
	for _, top := range releaseTop {
		p := filepath.Join(root, top)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, filepath.Join(dst, top)); err != nil {
				return err
			}
		case fi.IsDir():
			if err := mkdir(top); err != nil {
				return err
			}
		}
	}
	files := etcFiles(network)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dst, "etc", name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, name := range releaseEtc {
		if err := copyTree(filepath.Join(root, "etc", name), filepath.Join(dst, "etc", name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("copy %s: %w", name, err)
		}
	}
	links := map[string]string{"etc/localtime": "/usr/share/zoneinfo/Etc/UTC"}
	if _, err := os.Stat(filepath.Join(root, "usr/lib/os-release")); err == nil {
		links["etc/os-release"] = "../usr/lib/os-release"
	}
	for name, target := range alternatives(root) {
		links["etc/alternatives/"+name] = target
	}
	for p, target := range links {
		if err := os.Symlink(target, filepath.Join(dst, p)); err != nil {
			return err
		}
	}
	if err := mkdir(path.Dir(strings.TrimPrefix(agentPath, "/"))); err != nil {
		return err
	}
	return linkOrCopy(agent, filepath.Join(dst, agentPath))
}

// alternatives lists Debian's /etc/alternatives links (awk, editor,
// pager…), without which those commands would not be found. Only links into
// the release's own folders are kept.
func alternatives(root string) map[string]string {
	dir := filepath.Join(root, "etc/alternatives")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !path.IsAbs(target) || !inRelease(target) {
			continue
		}
		out[e.Name()] = target
	}
	return out
}

// copyTree copies a file, link or folder (links as links), world-readable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyRegular(p, to, 0o644)
		}
		return nil // devices, sockets: not a release's public file
	})
}

func copyRegular(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// linkOrCopy puts the staged agent in the skeleton: a hard link (the run
// folder is one file system), else a copy.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyRegular(src, dst, 0o755)
}

// pruneSkeletons removes skeletons not used for an hour (made for an older
// agent or an older state of the release); ones in use are touched by
// every start that uses them.
func pruneSkeletons(runDir string, keep func(name string) bool) {
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "root-") && !strings.HasPrefix(name, ".root-") || keep(name) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < time.Hour {
			continue
		}
		os.RemoveAll(filepath.Join(runDir, name))
	}
}

// touch marks a skeleton as in use, for pruneSkeletons.
func (s *skeleton) touch() {
	now := time.Now()
	os.Chtimes(s.dir, now, now)
}
