package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// An empty workspace (a new sandbox's) does not need mkfs: its image is a
// sparse copy of a template, an empty ext4 of the same size made once per
// size in the run folder. Only the template's few allocated blocks (about a
// megabyte: superblock, group descriptors, bitmaps, root folder) are copied;
// the image has the same size, so the same quota. A workspace with files
// still goes through mkfs.ext4 -d, which fills the image from the folder.

var templateMu sync.Mutex

// diskTemplate returns the template image of size bytes in dir, making it
// if needed.
func diskTemplate(dir, mkfs string, size int64) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	p := filepath.Join(dir, "disk-"+strconv.FormatInt(size, 10)+".img")
	if fi, err := os.Stat(p); err == nil && fi.Size() == size && isExt4(p) {
		return p, nil
	}
	empty, err := os.MkdirTemp(dir, ".disk-empty-")
	if err != nil {
		return "", fmt.Errorf("local: workspace disk template: %w", err)
	}
	defer os.RemoveAll(empty)
	tmp := filepath.Join(dir, ".disk-"+strconv.FormatInt(size, 10)+".img.tmp")
	if err := makeImage(mkfs, tmp, empty, size); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("local: workspace disk template: %w", err)
	}
	return p, nil
}

// isEmptyDir reports whether dir holds nothing.
func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// copySparse copies src to a new file dst, only the ranges holding data
// (SEEK_DATA/SEEK_HOLE), and gives dst src's size.
func copySparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		out.Close()
		os.Remove(dst)
		return fmt.Errorf("local: workspace disk: copy the template: %w", err)
	}
	if err := out.Truncate(fi.Size()); err != nil {
		return fail(err)
	}
	inFD := int(in.Fd())
	for off := int64(0); off < fi.Size(); {
		data, err := unix.Seek(inFD, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return fail(err)
		}
		hole, err := unix.Seek(inFD, data, unix.SEEK_HOLE)
		if err != nil {
			return fail(err)
		}
		// Read and write: the run folder may be another file system,
		// where copy_file_range is refused.
		if _, err := io.Copy(io.NewOffsetWriter(out, data), io.NewSectionReader(in, data, hole-data)); err != nil {
			return fail(err)
		}
		off = hole
	}
	if err := out.Close(); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

// syncCopied makes what was copied under dir durable: each file and folder
// is fsync'ed when there are few, else the whole file system is synced
// (syncfs also flushes every other writer's data on that disk, which a
// small workspace should not wait for).
func syncCopied(dir string) error {
	const fewEntries = 256
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if len(paths) > fewEntries {
			return filepath.SkipAll
		}
		if d.Type().IsRegular() || d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil || len(paths) > fewEntries {
		return syncDir(dir)
	}
	// The folder's own entry lives in its parent.
	paths = append(paths, filepath.Dir(dir))
	for _, p := range paths {
		if err := fsyncPath(p); err != nil {
			return fmt.Errorf("local: workspace disk: sync %s: %w", strings.TrimPrefix(p, dir), err)
		}
	}
	return nil
}

func fsyncPath(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}
