package local

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// mountImage mounts the ext4 image img on dir through a loop device the
// driver sets up itself (LOOP_CONFIGURE, autoclear: the device goes with
// the mount). mount(8) does the same after probing the image for its type,
// in a process of its own; it is still used where the kernel or the
// container refuses the direct way.
func mountImage(img, dir string) error {
	err := mountLoop(img, dir)
	if err == nil {
		return nil
	}
	if errors.Is(err, errLoopUnavailable) {
		out, herr := helper("mount", "-o", "loop,nodev,nosuid,noatime", img, dir).CombinedOutput()
		if herr != nil {
			return fmt.Errorf("%v: %s", herr, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return err
}

var errLoopUnavailable = errors.New("loop devices cannot be set up directly")

func mountLoop(img, dir string) error {
	ctl, err := unix.Open("/dev/loop-control", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", errLoopUnavailable, err)
	}
	defer unix.Close(ctl)
	file, err := unix.Open(img, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(file)
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(ctl, unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("%w: %v", errLoopUnavailable, err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		loop, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: %v", errLoopUnavailable, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(file)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], img)
		err = unix.IoctlLoopConfigure(loop, &cfg)
		if errors.Is(err, unix.EBUSY) && try < 20 {
			unix.Close(loop) // another process took it meanwhile
			continue
		}
		if err != nil {
			unix.Close(loop)
			return fmt.Errorf("%w: %v", errLoopUnavailable, err)
		}
		err = unix.Mount(dev, dir, "ext4", unix.MS_NODEV|unix.MS_NOSUID|unix.MS_NOATIME, "")
		// Closing the device frees it if the mount failed (autoclear);
		// a mounted one stays until it is unmounted.
		unix.Close(loop)
		return err
	}
}
