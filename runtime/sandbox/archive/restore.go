package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/klauspost/compress/gzip"
)

// RestoreOptions bounds a restore.
type RestoreOptions struct {
	// MaxExpandedBytes limits the regular files' total size (0: default 8 GiB).
	MaxExpandedBytes int64
	// MaxEntries limits the files, folders and links (0: DefaultMaxEntries).
	MaxEntries int
}

// Restore unpacks a tar + gzip archive into dir, which should be empty. It
// refuses, naming the entry: absolute names, '..', device files and pipes,
// symlinks that point out of the workspace, hard links to anything but a
// file unpacked before, and entries beneath a symlink. On error dir holds a
// partial tree: restore into a fresh folder and rename it into place.
func Restore(ctx context.Context, src io.Reader, dir string, opts RestoreOptions) (Stats, error) {
	if opts.MaxExpandedBytes <= 0 {
		opts.MaxExpandedBytes = DefaultMaxExpandedBytes
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	zr, err := gzip.NewReader(src)
	if err != nil {
		return Stats{}, fmt.Errorf("archive: not a gzip archive: %w", err)
	}
	defer zr.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Stats{}, fmt.Errorf("archive: open %s: %w", dir, err)
	}
	defer root.Close()
	u := &unpacker{root: root, opts: opts, links: map[string]bool{}, files: map[string]bool{}}
	tr := tar.NewReader(zr)
	for {
		if err := ctx.Err(); err != nil {
			return u.st, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return u.st, nil
		}
		if err != nil {
			return u.st, fmt.Errorf("archive: read: %w", err)
		}
		if err := u.entry(hdr, tr); err != nil {
			return u.st, err
		}
	}
}

type unpacker struct {
	root  *os.Root
	opts  RestoreOptions
	st    Stats
	links map[string]bool // symlinks created so far
	files map[string]bool // regular files created so far
}

func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	name, err := entryName(hdr.Name)
	if err != nil || name == "" {
		return err
	}
	if u.st.Entries >= u.opts.MaxEntries {
		return fmt.Errorf("archive: entry %q: past the %d files, folders and links a restore unpacks (max_entries)", hdr.Name, u.opts.MaxEntries)
	}
	if u.links[name] {
		return fmt.Errorf("archive: entry %q: would write through the symlink of the same name", hdr.Name)
	}
	if u.files[name] {
		// The last copy would win here, the first where the archive is
		// read in place (Sandbox.readFile): one name, one content.
		return fmt.Errorf("archive: entry %q: names a file the archive already holds", hdr.Name)
	}
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if u.links[p] {
			return fmt.Errorf("archive: entry %q: lies beneath the symlink %q", hdr.Name, p)
		}
	}
	perm := os.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		err = u.root.MkdirAll(name, 0o755)
		if err == nil {
			err = u.root.Chmod(name, perm|0o700)
		}
	case tar.TypeReg:
		err = u.file(name, hdr, perm, r)
	case tar.TypeSymlink:
		err = u.symlink(name, hdr)
	case tar.TypeLink:
		err = u.hardlink(name, hdr)
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("archive: entry %q: device files are refused", hdr.Name)
	case tar.TypeFifo:
		return fmt.Errorf("archive: entry %q: named pipes are refused", hdr.Name)
	default:
		return fmt.Errorf("archive: entry %q: entry type %q is not supported", hdr.Name, hdr.Typeflag)
	}
	if err != nil {
		return fmt.Errorf("archive: entry %q: %w", hdr.Name, err)
	}
	u.st.Entries++
	return nil
}

func (u *unpacker) file(name string, hdr *tar.Header, perm os.FileMode, r io.Reader) error {
	if u.st.Bytes+hdr.Size > u.opts.MaxExpandedBytes {
		return fmt.Errorf("unpacks past the %d-byte limit (max_expanded_bytes)", u.opts.MaxExpandedBytes)
	}
	if err := u.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	n, err := io.CopyN(f, r, hdr.Size)
	u.st.Bytes += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	u.files[name] = true
	return u.root.Chtimes(name, hdr.ModTime, hdr.ModTime)
}

func (u *unpacker) symlink(name string, hdr *tar.Header) error {
	if !linkAllowed(name, hdr.Linkname) {
		return fmt.Errorf("symlink to %q points out of the workspace", hdr.Linkname)
	}
	if err := u.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	if err := u.root.Symlink(hdr.Linkname, name); err != nil {
		return err
	}
	u.links[name] = true
	return nil
}

func (u *unpacker) hardlink(name string, hdr *tar.Header) error {
	target, err := entryName(hdr.Linkname)
	if err != nil || !u.files[target] {
		return fmt.Errorf("hard link to %q points out of the workspace or to no earlier file", hdr.Linkname)
	}
	if err := u.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	if err := u.root.Link(target, name); err != nil {
		return err
	}
	u.files[name] = true
	return nil
}
