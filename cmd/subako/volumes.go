package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/volume"
)

// volumeFlags bound each session's volume.
type volumeFlags struct {
	MaxFile  byteSize
	MaxFiles int
	MaxBytes byteSize
}

func bindVolumes(fs *flag.FlagSet, v *volumeFlags) {
	v.MaxFile = byteSize(runtime.DefaultVolumeMaxFileBytes)
	fs.Var(&v.MaxFile, "volume-max-file", "largest file a session's volume holds (an upload or a function's write past it is refused)")
	fs.IntVar(&v.MaxFiles, "volume-max-files", runtime.DefaultVolumeMaxFiles, "files a session's volume holds at most")
	v.MaxBytes = byteSize(runtime.DefaultVolumeMaxTotalBytes)
	fs.Var(&v.MaxBytes, "volume-max-bytes", "bytes a session's volume holds at most, all its files together")
}

func (v volumeFlags) validate() error {
	switch {
	case v.MaxFile < 1:
		return fmt.Errorf("--volume-max-file must be at least 1 byte")
	case v.MaxFiles < 1:
		return fmt.Errorf("--volume-max-files must be at least 1")
	case v.MaxBytes < v.MaxFile:
		return fmt.Errorf("--volume-max-bytes (%s) must be at least --volume-max-file (%s)", v.MaxBytes.String(), v.MaxFile.String())
	}
	return nil
}

// startVolumes keeps sessions' volumes in the data folder's volumes/.
func startVolumes(ctx context.Context, c *Config, rt *runtime.Runtime) error {
	if err := c.Volumes.validate(); err != nil {
		return err
	}
	dir := filepath.Join(c.Data, "volumes")
	store, err := volume.NewLocal(dir)
	if err != nil {
		return err
	}
	rt.StartVolumes(ctx, runtime.VolumeOptions{Store: store, DiskDir: dir, MaxFileBytes: int64(c.Volumes.MaxFile),
		MaxFiles: c.Volumes.MaxFiles, MaxTotalBytes: int64(c.Volumes.MaxBytes), MinFreeDisk: int64(c.MinFreeDisk)})
	return nil
}
