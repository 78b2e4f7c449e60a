package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	// SHA256 is the hex checksum of the archive as written (Create only).
	SHA256 string
}

// Limits bounds an archive the way RestoreOptions bounds its restore, so
// Create refuses what Restore would refuse later.
type Limits struct {
	// MaxBytes is the compressed size (0: DefaultMaxBytes).
	MaxBytes int64
	// MaxExpandedBytes is the regular files' total size, each hard-linked
	// file counted once and a sparse file at its full length, since that is
	// what a restore writes (0: DefaultMaxExpandedBytes).
	MaxExpandedBytes int64
	// MaxEntries is the number of files, folders and links (0:
	// DefaultMaxEntries).
	MaxEntries int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxExpandedBytes <= 0 {
		l.MaxExpandedBytes = DefaultMaxExpandedBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// RefusedError is returned when the folder holds an entry a restore would
// refuse: nothing is written, and the folder should be kept as it is.
type RefusedError struct {
	Entry  string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("archive: %q cannot be archived: %s, and a restore would refuse it", e.Entry, e.Reason)
}

// Create writes dir as tar + gzip to dst, failing with *TooLargeError once
// more than lim.MaxBytes compressed bytes would be written and with
// *RefusedError for an entry Restore would refuse, so whatever Create accepts
// restores. Files are read without following symlinks; owners are not
// recorded; a file with several names is written once, then as hard links.
func Create(ctx context.Context, dir string, dst io.Writer, lim Limits) (Stats, error) {
	lim = lim.withDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Stats{}, fmt.Errorf("archive: open %s: %w", dir, err)
	}
	defer root.Close()
	sum := sha256.New()
	cw := &limitWriter{w: io.MultiWriter(dst, sum), limit: lim.MaxBytes}
	zw, err := gzip.NewWriterLevel(cw, gzip.DefaultCompression)
	if err != nil {
		return Stats{}, fmt.Errorf("archive: gzip: %w", err)
	}
	c := &creator{tw: tar.NewWriter(zw), root: root, lim: lim, inodes: map[inode]string{}}
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
		return c.add(filepath.ToSlash(rel), d)
	})
	if err == nil {
		err = c.tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	st := c.st
	st.Compressed = cw.n
	var refused *RefusedError
	switch {
	case cw.over:
		return st, &TooLargeError{Limit: lim.MaxBytes}
	case errors.As(err, &refused):
		return st, refused
	case err != nil:
		return st, fmt.Errorf("archive: create from %s: %w", dir, err)
	}
	st.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return st, nil
}

// inode identifies a file across its hard links.
type inode struct{ dev, ino uint64 }

type creator struct {
	tw     *tar.Writer
	root   *os.Root
	lim    Limits
	st     Stats
	inodes map[inode]string // first name of each file with several links
}

func (c *creator) add(rel string, d fs.DirEntry) error {
	if name, err := entryName(rel); err != nil || name != rel {
		return &RefusedError{Entry: rel, Reason: refusal(rel)}
	}
	if c.st.Entries >= c.lim.MaxEntries {
		return &RefusedError{Entry: rel, Reason: fmt.Sprintf("the workspace holds more than %d files, folders and links, the most a restore unpacks (max_entries)", c.lim.MaxEntries)}
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()}
	switch {
	case info.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := c.root.Readlink(rel)
		if err != nil {
			return err
		}
		if !linkAllowed(rel, target) {
			c.st.Skipped = append(c.st.Skipped, rel)
			return nil
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case info.Mode().IsRegular():
		return c.addFile(hdr)
	default:
		c.st.Skipped = append(c.st.Skipped, rel)
		return nil
	}
	c.st.Entries++
	return c.tw.WriteHeader(hdr)
}

// refusal says why entryName refuses a name a folder can hold.
func refusal(rel string) string {
	if strings.Contains(rel, `\`) {
		return "its name contains a backslash"
	}
	return "its name is not a plain relative path"
}

// addFile copies one regular file, or writes a hard link to the name it was
// first archived under. O_NOFOLLOW and O_NONBLOCK guard against the entry
// having become a symlink or a pipe since it was listed.
func (c *creator) addFile(hdr *tar.Header) error {
	f, err := c.root.OpenFile(hdr.Name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		c.st.Skipped = append(c.st.Skipped, hdr.Name)
		return nil
	}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok && sys.Nlink > 1 {
		id := inode{dev: uint64(sys.Dev), ino: sys.Ino}
		if first, seen := c.inodes[id]; seen {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			c.st.Entries++
			return c.tw.WriteHeader(hdr)
		}
		c.inodes[id] = hdr.Name
	}
	if c.st.Bytes+info.Size() > c.lim.MaxExpandedBytes {
		return &RefusedError{Entry: hdr.Name, Reason: fmt.Sprintf(
			"the files add up to more than the %d-byte limit a restore writes (max_expanded_bytes; a sparse file counts at its full length)",
			c.lim.MaxExpandedBytes)}
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	if err := c.tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(c.tw, f, hdr.Size); err != nil {
		return fmt.Errorf("copy %s: %w", hdr.Name, err)
	}
	c.st.Entries++
	c.st.Bytes += hdr.Size
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
