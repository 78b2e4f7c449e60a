package fn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/subako/subako/runtime/volume"
)

// nativeVolume is a native call's /volume: the folder bound into the
// sandbox. A native process writes it with plain system calls, so what the
// WebAssembly engine checks at each write is checked here around the call:
// RLIMIT_FSIZE bounds one file during it (EFBIG), and after it the folder
// is compared with what it held before. Writes and deletes are listed (a
// native engine does not see reads: none are listed); links, special files
// and names the API would refuse are removed; a call that added more files
// or bytes than the volume had room for loses the files it created and
// fails, naming the limit.
type nativeVolume struct {
	m      VolumeMount
	before map[string]fileStamp
}

type fileStamp struct {
	size int64
	mod  time.Time
	ino  uint64
}

func openNativeVolume(m VolumeMount, uid, gid int) (*nativeVolume, error) {
	before, err := stampVolume(m.Dir, func(p string) error {
		// The sandbox runs as an unprivileged host user: it owns the
		// volume's files, as it owns a machine's workspace. The server
		// (root) and the WebAssembly engine reach them either way.
		if os.Geteuid() == 0 {
			return os.Lchown(p, uid, gid)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fn: prepare /volume: %w", err)
	}
	return &nativeVolume{m: m, before: before}, nil
}

// stampVolume walks dir without following links; visit sees every entry.
func stampVolume(dir string, visit func(string) error) (map[string]fileStamp, error) {
	out := map[string]fileStamp{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if visit != nil {
			if err := visit(p); err != nil {
				return err
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		st := fileStamp{size: info.Size(), mod: info.ModTime()}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok {
			st.ino = sys.Ino
		}
		out[filepath.ToSlash(rel)] = st
		return nil
	})
	return out, err
}

// after lists what the call changed and undoes what the volume's rules refuse.
func (v *nativeVolume) after() ([]VolumeAccess, *CallError) {
	var removed []string
	// Links, fifos, sockets, files with a second name, and names the API
	// refuses go: nothing in a volume may lead out of it or be two files.
	filepath.WalkDir(v.m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == v.m.Dir {
			return nil
		}
		rel, _ := filepath.Rel(v.m.Dir, p)
		rel = filepath.ToSlash(rel)
		bad := volume.CheckPath(rel) != nil
		if !bad && !d.IsDir() && !d.Type().IsRegular() {
			bad = true
		}
		if !bad && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				if sys, ok := info.Sys().(*syscall.Stat_t); ok && sys.Nlink > 1 {
					bad = true
				}
			}
		}
		if bad {
			os.RemoveAll(p)
			removed = append(removed, rel)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	now, err := stampVolume(v.m.Dir, nil)
	if err != nil {
		return nil, &CallError{Reason: ErrToolFailed, Detail: fmt.Sprintf("read /volume after the call: %v", err)}
	}
	var acc []VolumeAccess
	var created []string
	var grew int64
	for p, st := range now {
		old, ok := v.before[p]
		switch {
		case !ok:
			created = append(created, p)
			grew += st.size
			acc = append(acc, VolumeAccess{Path: p, Op: VolumeWrite})
		case old != st:
			grew += st.size - old.size
			acc = append(acc, VolumeAccess{Path: p, Op: VolumeWrite})
		}
	}
	for p, old := range v.before {
		if _, ok := now[p]; !ok {
			grew -= old.size
			acc = append(acc, VolumeAccess{Path: p, Op: VolumeDelete})
		}
	}
	sort.Slice(acc, func(i, j int) bool { return acc[i].Path < acc[j].Path })
	if len(acc) > maxVolumeAccesses {
		acc = acc[:maxVolumeAccesses]
	}
	var why string
	switch {
	case len(removed) > 0:
		why = fmt.Sprintf("made %d entries in /volume that are not plain files under names the volume allows (links, special files, or names like %q); they were removed", len(removed), removed[0])
	case v.m.Write && len(created) > v.m.MaxNewFiles:
		why = fmt.Sprintf("created %d files in /volume; the room left was %d files (--volume-max-files): the files it created were removed", len(created), v.m.MaxNewFiles)
	case v.m.Write && grew > v.m.MaxNewBytes:
		why = fmt.Sprintf("added %d bytes to /volume; the room left was %d bytes (--volume-max-bytes): the files it created were removed", grew, v.m.MaxNewBytes)
	}
	if why == "" {
		return acc, nil
	}
	if len(removed) == 0 {
		for _, p := range created {
			if err := os.Remove(filepath.Join(v.m.Dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				why += fmt.Sprintf(" (removing %s: %v)", p, err)
			}
		}
	}
	return acc, &CallError{Reason: ErrToolFailed, Detail: why}
}
