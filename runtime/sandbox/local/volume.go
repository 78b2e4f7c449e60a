package local

import (
	"os"
	"time"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/volume"
)

// Bounds of the ownership pass over a volume before each exec.
const (
	volumeGiveEntries = 50_000
	volumeGiveTime    = 2 * time.Second
)

// volumeBind binds the session's volume at /volume: read-only, or
// read-write when the grant says write.
func volumeBind(fds *fdTable, spec sandbox.Spec) ([]string, error) {
	fd, err := fds.open(spec.VolumeDir)
	if err != nil {
		return nil, err
	}
	if spec.VolumeWrite {
		return []string{"--bind-fd", fd, "/volume"}, nil
	}
	return []string{"--ro-bind-fd", fd, "/volume"}, nil
}

// stageVolume makes the volume reachable by bwrap running as the sandbox's
// uid, as a one-shot sandbox's binds are (OneShot.stage): a root server
// bind-mounts it onto a folder of a private staging folder for the start
// only. Once bwrap has set up its mount namespace the sandbox holds its own
// copy of the mount, so undo (detaching the staging one) leaves /volume in
// place. Its files are given to the sandbox's host user first.
func (d *Driver) stageVolume(spec sandbox.Spec) (sandbox.Spec, func(), error) {
	if spec.VolumeDir == "" {
		return spec, func() {}, nil
	}
	uid, gid := d.ids()
	if d.root {
		if err := volume.GiveTo(spec.VolumeDir, uid, gid, volumeGiveEntries, volumeGiveTime); err != nil {
			return spec, func() {}, err
		}
	}
	o := &OneShot{UID: uid, GID: gid, Binds: []OneShotBind{{Host: spec.VolumeDir, Guest: "/volume", Write: spec.VolumeWrite}}}
	binds, undo, err := o.stage()
	if err != nil {
		return spec, undo, err
	}
	spec.VolumeDir = binds[0].Host
	return spec, undo, nil
}

// giveVolume gives what the volume holds (files the app uploaded since the
// last exec are the server's) to the sandbox's host user, so the sandbox
// can read them, through an os.Root that follows no link.
func (m *Machine) giveVolume() {
	if m.volumeDir == "" || os.Geteuid() != 0 {
		return
	}
	_ = volume.GiveTo(m.volumeDir, m.volumeUID, m.volumeGID, volumeGiveEntries, volumeGiveTime)
}
