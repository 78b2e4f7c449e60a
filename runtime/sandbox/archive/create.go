package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/klauspost/compress/gzip"
)

// Stats describes one archive or restore.
type Stats struct {
	Entries int
	// Bytes is the size of the regular files' content, uncompressed.
	Bytes int64
	// Compressed is the archive's size (Create only).
	Compressed int64
	// Skipped lists entries Create left out: sockets, pipes, and symlinks a
	// restore would refuse.
	Skipped []string
}

// Create writes dir as tar + gzip to dst, failing with *TooLargeError once
// more than maxBytes compressed bytes would be written (0: DefaultMaxBytes).
// Files are read without following symlinks; owners are not recorded.
func Create(ctx context.Context, dir string, dst io.Writer, maxBytes int64) (Stats, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Stats{}, fmt.Errorf("archive: open %s: %w", dir, err)
	}
	defer root.Close()
	cw := &limitWriter{w: dst, limit: maxBytes}
	zw, err := gzip.NewWriterLevel(cw, gzip.DefaultCompression)
	if err != nil {
		return Stats{}, fmt.Errorf("archive: gzip: %w", err)
	}
	tw := tar.NewWriter(zw)
	var st Stats
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		return addEntry(tw, root, filepath.ToSlash(rel), d, &st)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	st.Compressed = cw.n
	if cw.over {
		return st, &TooLargeError{Limit: maxBytes}
	}
	if err != nil {
		return st, fmt.Errorf("archive: create from %s: %w", dir, err)
	}
	return st, nil
}

func addEntry(tw *tar.Writer, root *os.Root, rel string, d fs.DirEntry, st *Stats) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()}
	switch {
	case info.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(rel)
		if err != nil {
			return err
		}
		if !linkAllowed(rel, target) {
			st.Skipped = append(st.Skipped, rel)
			return nil
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case info.Mode().IsRegular():
		return addFile(tw, root, hdr, st)
	default:
		st.Skipped = append(st.Skipped, rel)
		return nil
	}
	st.Entries++
	return tw.WriteHeader(hdr)
}

// addFile copies one regular file. O_NOFOLLOW and O_NONBLOCK guard against the
// entry having become a symlink or a pipe since it was listed.
func addFile(tw *tar.Writer, root *os.Root, hdr *tar.Header, st *Stats) error {
	f, err := root.OpenFile(hdr.Name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		st.Skipped = append(st.Skipped, hdr.Name)
		return nil
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("copy %s: %w", hdr.Name, err)
	}
	st.Entries++
	st.Bytes += hdr.Size
	return nil
}

// limitWriter stops writing once limit bytes have been written.
type limitWriter struct {
	w     io.Writer
	n     int64
	limit int64
	over  bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n+int64(len(p)) > l.limit {
		l.over = true
		return 0, fmt.Errorf("over %d bytes", l.limit)
	}
	n, err := l.w.Write(p)
	l.n += int64(n)
	return n, err
}
