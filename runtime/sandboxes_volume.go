package runtime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/tools"
	"github.com/subako/subako/runtime/volume"
)

// Bounds of the scans of /volume around a sandbox exec: entries (files and
// folders) beyond the file limit, and time.
const (
	sandboxVolumeScanExtra = 10_000
	sandboxVolumeScanTime  = 3 * time.Second
)

// sandboxVolumeRun is one exec's view of the session's volume, for a sandbox
// whose grant says write: the volume as it stood before the exec, to tell
// afterwards what the exec made, changed and deleted.
type sandboxVolumeRun struct {
	r      *Runtime
	v      *volumeSet
	e      SandboxExec
	dir    string
	before volume.Scan
}

// sandboxVolume puts the session's volume on the sandbox's key when its
// grant says read or write (the machine binds it at /volume when it
// starts) and, for write, notes what the volume holds before the exec.
func (r *Runtime) sandboxVolume(ctx context.Context, e SandboxExec, key *sandbox.Key) *sandboxVolumeRun {
	v := r.volumes.Load()
	if v == nil || e.Grant.Volume == "" || e.Grant.Volume == tools.VolumeNone {
		return nil
	}
	dir, ok := v.Store.LocalDir(e.SessionID)
	if !ok {
		return nil
	}
	key.VolumeDir, key.VolumeWrite = dir, e.Grant.Volume == tools.VolumeWrite
	if !key.VolumeWrite {
		return nil
	}
	run := &sandboxVolumeRun{r: r, v: v, e: e, dir: dir}
	run.before, _ = volume.ScanDir(dir, v.MaxFiles+sandboxVolumeScanExtra, sandboxVolumeScanTime, false, nil)
	return run
}

// after reads /volume again once the exec is over: links, special files,
// files with two names and names the API refuses are removed; a file over
// --volume-max-file, then (while the volume is over --volume-max-files or
// --volume-max-bytes) the files the exec created, then those it changed,
// are removed; what is left is recorded like a function call's writes (the
// volume's records, the call's list, the storage meter, the Files tab's
// live event). The error, if any, says what was removed and why.
func (s *sandboxVolumeRun) after(ctx context.Context) error {
	if s == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	v := s.v
	now, err := volume.ScanDir(s.dir, v.MaxFiles+sandboxVolumeScanExtra, sandboxVolumeScanTime, true, nil)
	if err != nil {
		return fmt.Errorf("volume: read /volume after the exec: %w", err)
	}
	var why []string
	if len(now.Removed) > 0 {
		why = append(why, fmt.Sprintf("the exec made %d entries in /volume that are not plain files under names the volume allows (links, special files, files with a second name, or names like %q); they were removed",
			len(now.Removed), now.Removed[0]))
	}
	var created, changed []string
	for p, st := range now.Files {
		old, ok := s.before.Files[p]
		switch {
		case !ok || old.Ino != st.Ino:
			created = append(created, p)
		case old != st:
			changed = append(changed, p)
		}
	}
	sort.Strings(created)
	sort.Strings(changed)
	gone := map[string]bool{}
	remove := func(p string) {
		if err := volume.Remove(s.dir, p); err == nil {
			gone[p] = true
			delete(now.Files, p)
		}
	}
	var big []string
	for _, p := range append(append([]string{}, created...), changed...) {
		if now.Files[p].Size > v.MaxFileBytes {
			big = append(big, p)
			remove(p)
		}
	}
	if len(big) > 0 {
		why = append(why, fmt.Sprintf("%d files written in /volume were over %d bytes, the most one file may hold (--volume-max-file), and were removed, such as %q", len(big), v.MaxFileBytes, big[0]))
	}
	count, total := len(now.Files), int64(0)
	for _, st := range now.Files {
		total += st.Size
	}
	over := func() bool { return count > v.MaxFiles || total > v.MaxTotalBytes }
	switch {
	case now.Stopped != "":
		why = append(why, fmt.Sprintf("/volume was not read to its end (%s; the volume may hold %d files): what lies beyond was not recorded", now.Stopped, v.MaxFiles))
	case over() && s.before.Stopped != "":
		why = append(why, fmt.Sprintf("/volume holds %d files and %d bytes, over its limits (--volume-max-files %d, --volume-max-bytes %d), and what the exec added cannot be told (%s before it): nothing was removed",
			count, total, v.MaxFiles, v.MaxTotalBytes, s.before.Stopped))
	case over():
		startCount, startTotal := count, total
		var cut []string
		for _, list := range [][]string{created, changed} {
			for _, p := range list {
				if !over() {
					break
				}
				if st, ok := now.Files[p]; ok {
					remove(p)
					if gone[p] {
						count--
						total -= st.Size
						cut = append(cut, p)
					}
				}
			}
		}
		why = append(why, fmt.Sprintf("the exec left /volume with %d files and %d bytes, over its limits (--volume-max-files %d, --volume-max-bytes %d): %d files it wrote were removed (%s)",
			startCount, startTotal, v.MaxFiles, v.MaxTotalBytes, len(cut), strings.Join(first(cut, 5), ", ")))
	}
	var acc []fn.VolumeAccess
	for _, p := range append(created, changed...) {
		if !gone[p] {
			acc = append(acc, fn.VolumeAccess{Path: p, Op: fn.VolumeWrite})
		} else if _, existed := s.before.Files[p]; existed {
			acc = append(acc, fn.VolumeAccess{Path: p, Op: fn.VolumeDelete})
		}
	}
	if s.before.Stopped == "" && now.Stopped == "" {
		for p := range s.before.Files {
			if _, ok := now.Files[p]; !ok && !gone[p] {
				acc = append(acc, fn.VolumeAccess{Path: p, Op: fn.VolumeDelete})
			}
		}
	}
	sort.Slice(acc, func(i, j int) bool { return acc[i].Path < acc[j].Path })
	if len(acc) > 1000 {
		acc = acc[:1000]
	}
	s.r.volumeAfterCall(ctx, FunctionCall{SessionID: s.e.SessionID, CallID: s.e.CallID}, acc)
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("volume: %s", strings.Join(why, "; "))
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}
