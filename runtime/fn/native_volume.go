package fn

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	before map[string]volume.Stamp
}

// Bounds of the walks of /volume around a native call: entries (files and
// folders) and time. Every walk goes through an os.Root (volume.ScanDir):
// the folder is also bound read-write into the session's sandboxes, whose
// processes may swap a folder for a link to / while the server (root)
// changes owners before the call and removes entries after it.
const (
	nativeVolumeScanEntries = 200_000
	nativeVolumeScanTime    = 5 * time.Second
)

func openNativeVolume(m VolumeMount, uid, gid int) (*nativeVolume, error) {
	// The sandbox runs as an unprivileged host user: it owns the
	// volume's files, as it owns a machine's workspace. The server
	// (root) and the WebAssembly engine reach them either way.
	var visit func(r *os.Root, rel string, st *syscall.Stat_t)
	if os.Geteuid() == 0 {
		visit = func(r *os.Root, rel string, st *syscall.Stat_t) {
			if int(st.Uid) != uid || int(st.Gid) != gid {
				r.Lchown(rel, uid, gid)
			}
		}
	}
	scan, err := volume.ScanDir(m.Dir, nativeVolumeScanEntries, nativeVolumeScanTime, false, visit)
	if err == nil && scan.Stopped != "" {
		err = errors.New(scan.Stopped)
	}
	if err != nil {
		return nil, fmt.Errorf("fn: prepare /volume: %w", err)
	}
	return &nativeVolume{m: m, before: scan.Files}, nil
}

// after lists what the call changed and undoes what the volume's rules refuse.
func (v *nativeVolume) after() ([]VolumeAccess, *CallError) {
	// Links, fifos, sockets, files with a second name, and names the API
	// refuses go: nothing in a volume may lead out of it or be two files.
	scan, err := volume.ScanDir(v.m.Dir, nativeVolumeScanEntries, nativeVolumeScanTime, true, nil)
	if err != nil {
		return nil, &CallError{Reason: ErrToolFailed, Detail: fmt.Sprintf("read /volume after the call: %v", err)}
	}
	removed, now := scan.Removed, scan.Files
	var acc []VolumeAccess
	var created []string
	var grew int64
	for p, st := range now {
		old, ok := v.before[p]
		switch {
		case !ok:
			created = append(created, p)
			grew += st.Size
			acc = append(acc, VolumeAccess{Path: p, Op: VolumeWrite})
		case old != st:
			grew += st.Size - old.Size
			acc = append(acc, VolumeAccess{Path: p, Op: VolumeWrite})
		}
	}
	for p, old := range v.before {
		if _, ok := now[p]; !ok {
			grew -= old.Size
			acc = append(acc, VolumeAccess{Path: p, Op: VolumeDelete})
		}
	}
	sort.Slice(acc, func(i, j int) bool { return acc[i].Path < acc[j].Path })
	if len(acc) > maxVolumeAccesses {
		acc = acc[:maxVolumeAccesses]
	}
	var why string
	switch {
	case scan.Stopped != "":
		why = fmt.Sprintf("/volume was not read to its end after the call (%s): what lies beyond was not checked", scan.Stopped)
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
			if err := volume.Remove(v.m.Dir, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				why += fmt.Sprintf(" (removing %s: %v)", p, err)
			}
		}
	}
	return acc, &CallError{Reason: ErrToolFailed, Detail: why}
}
