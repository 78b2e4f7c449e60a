package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// Limits of the files verbs: what one read or write moves, what one
// listing shows, how long one call may take.
const (
	MaxFileReadBytes  = 32 << 20
	MaxFileWriteBytes = 32 << 20
	MaxListEntries    = 1000
	FilesTimeout      = 30 * time.Second
)

// Where a sandbox's files are read from.
const (
	FilesFromMachine = "machine" // the running machine's /workspace
	FilesFromFolder  = "folder"  // a suspended sandbox's kept folder (its archiving failed)
	FilesFromArchive = "archive" // the archive of a suspended or retired sandbox
	FilesFromNothing = "none"    // never ran, or its archive was deleted
)

// FileEntry is one file, folder or link under /workspace.
type FileEntry struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"` // file, folder, link or other
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	// Target is a link's target, as written.
	Target string `json:"target,omitempty"`
}

// Listing is one folder's entries, folders first, then by name.
type Listing struct {
	Path      string      `json:"path"`
	Source    string      `json:"source"`
	Entries   []FileEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

// FileError is a refusal of a files verb: Code says which (file_not_found,
// not_a_file, not_a_folder, file_too_large, sandbox_not_running,
// workspace_full), Detail says it for a person.
type FileError struct {
	Code   string
	Detail string
}

func (e *FileError) Error() string { return e.Detail }

func fileErr(code, format string, args ...any) *FileError {
	return &FileError{Code: code, Detail: fmt.Sprintf(format, args...)}
}

func notFoundIn(p string) *FileError {
	return fileErr("file_not_found", "/workspace/%s does not exist", p)
}

// cleanRel checks a path relative to /workspace; "" is /workspace itself.
// Callers check paths with the volume's rules first; os.Root is the guard.
func cleanRel(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if !fs.ValidPath(p) || strings.Contains(p, `\`) {
		return "", fileErr("invalid_path", "path %q is not a relative path below /workspace", p)
	}
	return p, nil
}

// filesBox finds the sandbox id's box and locks it; the caller unlocks.
func (m *Manager) filesBox(ctx context.Context, id string) (*box, error) {
	for range 3 {
		rec, err := m.cfg.Store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		b := m.adopt(rec)
		b.mu.Lock()
		if !b.gone && b.rec.ID == id {
			if b.machine == nil {
				// The stored record is the newer: another replica may have
				// suspended the sandbox since, naming a newer archive.
				b.rec = rec
			}
			return b, nil
		}
		b.mu.Unlock()
	}
	return nil, fmt.Errorf("sandbox: %s changed while its files were looked up; try again", id)
}

// sourceLocked says where b's files are now (b.mu held).
func (m *Manager) sourceLocked(ctx context.Context, b *box) string {
	if b.machine != nil {
		return FilesFromMachine
	}
	if _, err := os.Stat(m.workspaceDir(b.id)); err == nil && (b.rec.State == StateRunning || b.rec.ArchiveError != "") {
		return FilesFromFolder // the next exec starts from it
	}
	if _, err := m.cfg.Archives.Stat(ctx, b.rec.ArchiveRef()); err == nil {
		return FilesFromArchive
	}
	return FilesFromNothing
}

// ListFiles lists one folder of a sandbox's /workspace ("" for /workspace
// itself): from the running machine, else from its archive, which is read
// where it lies: a suspended sandbox is not restored.
func (m *Manager) ListFiles(ctx context.Context, id, dir string) (Listing, error) {
	ctx, cancel := context.WithTimeout(ctx, FilesTimeout)
	defer cancel()
	rel, err := cleanRel(dir)
	if err != nil {
		return Listing{}, err
	}
	b, err := m.filesBox(ctx, id)
	if err != nil {
		return Listing{}, err
	}
	src := m.sourceLocked(ctx, b)
	out := Listing{Path: dir, Source: src, Entries: []FileEntry{}}
	switch src {
	case FilesFromMachine, FilesFromFolder:
		defer b.mu.Unlock()
		err = listFolder(ctx, m.workspaceDir(id), rel, &out)
	case FilesFromArchive:
		ref := b.rec.ArchiveRef()
		b.mu.Unlock()
		err = m.listArchive(ctx, ref, rel, &out)
	default:
		b.mu.Unlock()
		if rel != "." {
			err = notFoundIn(dir)
		}
	}
	slices.SortFunc(out.Entries, func(a, b FileEntry) int {
		if (a.Type == "folder") != (b.Type == "folder") {
			if a.Type == "folder" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, err
}

func listFolder(ctx context.Context, ws, rel string, out *Listing) error {
	r, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("sandbox: open /workspace: %w", err)
	}
	defer r.Close()
	st, err := r.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return notFoundIn(out.Path)
	case err != nil:
		return pathErr(out.Path, err)
	case !st.IsDir():
		return fileErr("not_a_folder", "/workspace/%s is a %s, not a folder", out.Path, kind(st.Mode()))
	}
	d, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return pathErr(out.Path, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(MaxListEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("sandbox: list /workspace/%s: %w", out.Path, err)
	}
	if len(names) > MaxListEntries {
		names, out.Truncated = names[:MaxListEntries], true
	}
	for _, name := range names {
		if ctx.Err() != nil {
			return fmt.Errorf("sandbox: listing /workspace/%s took over %s", out.Path, FilesTimeout)
		}
		p := path.Join(rel, name)
		st, err := r.Lstat(p)
		if err != nil {
			continue // gone meanwhile
		}
		e := FileEntry{Name: name, Path: path.Join(out.Path, name), Type: kind(st.Mode()), ModifiedAt: st.ModTime()}
		if e.Type == "file" {
			e.Size = st.Size()
		}
		if e.Type == "link" {
			e.Target, _ = r.Readlink(p)
		}
		out.Entries = append(out.Entries, e)
	}
	return nil
}

func (m *Manager) listArchive(ctx context.Context, ref archive.Ref, rel string, out *Listing) error {
	found := rel == "."
	err := archive.Browse(ctx, m.cfg.Archives, ref, func(name string, hdr *tar.Header, _ io.Reader) error {
		if name == rel {
			found = true
			if hdr.Typeflag != tar.TypeDir {
				return fileErr("not_a_folder", "/workspace/%s is a %s, not a folder", out.Path, tarKind(hdr))
			}
			return nil
		}
		parent := path.Dir(name)
		if parent != rel {
			if rel != "." && strings.HasPrefix(name, rel+"/") {
				found = true
			}
			return nil
		}
		found = true
		if len(out.Entries) == MaxListEntries {
			out.Truncated = true
			return archive.ErrStop
		}
		e := FileEntry{Name: path.Base(name), Path: name, Type: tarKind(hdr), ModifiedAt: hdr.ModTime}
		if e.Type == "file" {
			e.Size = hdr.Size
		}
		if hdr.Typeflag == tar.TypeSymlink {
			e.Target = hdr.Linkname
		}
		out.Entries = append(out.Entries, e)
		return nil
	})
	if err != nil {
		return archiveErr(ctx, out.Path, err)
	}
	if !found {
		return notFoundIn(out.Path)
	}
	return nil
}

// ReadFile returns one file of a sandbox's /workspace, at most
// MaxFileReadBytes: from the running machine, else from its archive
// (a suspended sandbox is not restored to read it).
func (m *Manager) ReadFile(ctx context.Context, id, p string) ([]byte, FileEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, FilesTimeout)
	defer cancel()
	rel, err := cleanRel(p)
	if err != nil || rel == "." {
		return nil, FileEntry{}, fileErr("not_a_file", "/workspace is a folder; name a file in it")
	}
	b, err := m.filesBox(ctx, id)
	if err != nil {
		return nil, FileEntry{}, err
	}
	switch m.sourceLocked(ctx, b) {
	case FilesFromMachine, FilesFromFolder:
		defer b.mu.Unlock()
		return readFolderFile(m.workspaceDir(id), rel)
	case FilesFromArchive:
		ref := b.rec.ArchiveRef()
		b.mu.Unlock()
		return m.readArchiveFile(ctx, ref, rel, true)
	default:
		b.mu.Unlock()
		return nil, FileEntry{}, notFoundIn(p)
	}
}

func readFolderFile(ws, rel string) ([]byte, FileEntry, error) {
	r, err := os.OpenRoot(ws)
	if err != nil {
		return nil, FileEntry{}, fmt.Errorf("sandbox: open /workspace: %w", err)
	}
	defer r.Close()
	st, err := r.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, FileEntry{}, notFoundIn(rel)
	case err != nil:
		return nil, FileEntry{}, pathErr(rel, err)
	case !st.Mode().IsRegular():
		return nil, FileEntry{}, notAFile(rel, kind(st.Mode()))
	case st.Size() > MaxFileReadBytes:
		return nil, FileEntry{}, tooLarge(rel, st.Size())
	}
	// O_NOFOLLOW and O_NONBLOCK: the sandbox may swap the file for a link
	// or a fifo after the Lstat; what was opened is checked again.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, FileEntry{}, pathErr(rel, err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, FileEntry{}, notAFile(rel, "file swapped for something else")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileReadBytes+1))
	if err != nil {
		return nil, FileEntry{}, fmt.Errorf("sandbox: read /workspace/%s: %w", rel, err)
	}
	if len(data) > MaxFileReadBytes {
		return nil, FileEntry{}, tooLarge(rel, int64(len(data)))
	}
	return data, FileEntry{Name: path.Base(rel), Path: rel, Type: "file", Size: int64(len(data)), ModifiedAt: st.ModTime()}, nil
}

func (m *Manager) readArchiveFile(ctx context.Context, ref archive.Ref, rel string, followHardLink bool) ([]byte, FileEntry, error) {
	var data []byte
	var entry FileEntry
	var link string
	found := false
	err := archive.Browse(ctx, m.cfg.Archives, ref, func(name string, hdr *tar.Header, r io.Reader) error {
		if name != rel {
			if strings.HasPrefix(name, rel+"/") {
				found = true
				return notAFile(rel, "folder")
			}
			return nil
		}
		found = true
		entry = FileEntry{Name: path.Base(rel), Path: rel, Type: tarKind(hdr), Size: hdr.Size, ModifiedAt: hdr.ModTime}
		switch {
		case hdr.Typeflag == tar.TypeLink && followHardLink:
			link = hdr.Linkname
			return archive.ErrStop
		case entry.Type != "file":
			return notAFile(rel, entry.Type)
		case hdr.Size > MaxFileReadBytes:
			return tooLarge(rel, hdr.Size)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, io.LimitReader(r, MaxFileReadBytes+1)); err != nil {
			return err
		}
		data = buf.Bytes()
		return archive.ErrStop
	})
	if err != nil {
		return nil, FileEntry{}, archiveErr(ctx, rel, err)
	}
	if link != "" {
		target, err := cleanRel(strings.TrimSuffix(link, "/"))
		if err != nil {
			return nil, FileEntry{}, notAFile(rel, "hard link out of /workspace")
		}
		data, e, err := m.readArchiveFile(ctx, ref, target, false)
		e.Name, e.Path = entry.Name, entry.Path
		return data, e, err
	}
	if !found {
		return nil, FileEntry{}, notFoundIn(rel)
	}
	entry.Size = int64(len(data))
	return data, entry, nil
}

// WriteFile writes body (at most MaxFileWriteBytes) as p in a running
// sandbox's /workspace, making its folders, owned as /workspace is. The
// file appears whole or not at all. A sandbox that is not running answers
// a FileError sandbox_not_running: its archive is not rewritten.
func (m *Manager) WriteFile(ctx context.Context, id, p string, body io.Reader) (FileEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, FilesTimeout)
	defer cancel()
	rel, err := cleanRel(p)
	if err != nil || rel == "." {
		return FileEntry{}, fileErr("not_a_file", "/workspace is a folder; name a file in it")
	}
	// The body is read first, outside the sandbox's lock: a slow upload
	// holds up neither its execs nor its suspension.
	spool, n, err := m.spool(ctx, p, body)
	if err != nil {
		return FileEntry{}, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	b, err := m.filesBox(ctx, id)
	if err != nil {
		return FileEntry{}, err
	}
	defer b.mu.Unlock()
	if b.machine == nil {
		return FileEntry{}, fileErr("sandbox_not_running", "sandbox %s is %s: files are written only while it runs, "+
			"so a file is never lost to an archive written meanwhile; its next exec starts it (or upload a whole archive)", id, b.rec.State)
	}
	return writeFolderFile(m.workspaceDir(id), rel, spool, n)
}

func (m *Manager) spool(ctx context.Context, p string, body io.Reader) (*os.File, int64, error) {
	dir := filepath.Join(m.cfg.Dir, ".uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("sandbox: %w", err)
	}
	f, err := os.CreateTemp(dir, "file-*")
	if err != nil {
		return nil, 0, fmt.Errorf("sandbox: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(ctxReader{ctx, body}, MaxFileWriteBytes+1))
	if err == nil && n > MaxFileWriteBytes {
		err = tooLarge(p, n)
	} else if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, err
	}
	return f, n, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("the upload took over %s: %w", FilesTimeout, err)
	}
	return c.r.Read(b)
}

func writeFolderFile(ws, rel string, src io.Reader, n int64) (FileEntry, error) {
	r, err := os.OpenRoot(ws)
	if err != nil {
		return FileEntry{}, fmt.Errorf("sandbox: open /workspace: %w", err)
	}
	defer r.Close()
	top, err := r.Stat(".")
	if err != nil {
		return FileEntry{}, fmt.Errorf("sandbox: /workspace: %w", err)
	}
	uid, gid := int(top.Sys().(*syscall.Stat_t).Uid), int(top.Sys().(*syscall.Stat_t).Gid)
	names := strings.Split(rel, "/")
	for i := 1; i < len(names); i++ {
		dir := strings.Join(names[:i], "/")
		switch err := r.Mkdir(dir, 0o755); {
		case err == nil:
			r.Lchown(dir, uid, gid)
		case errors.Is(err, fs.ErrExist):
			st, err := r.Stat(dir)
			if err != nil {
				return FileEntry{}, pathErr(dir, err)
			}
			if !st.IsDir() {
				return FileEntry{}, fileErr("not_a_folder", "/workspace/%s is not a folder, so %s cannot be written in it", dir, rel)
			}
		default:
			return FileEntry{}, pathErr(dir, err)
		}
	}
	if st, err := r.Lstat(rel); err == nil && st.IsDir() {
		return FileEntry{}, notAFile(rel, "folder")
	}
	tmp := path.Join(path.Dir(rel), ".subako-upload-"+randomHex())
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return FileEntry{}, pathErr(path.Dir(rel), err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			r.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, src); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return FileEntry{}, fileErr("workspace_full", "/workspace has no room for %s (%d bytes): it is full at its disk size "+
				"(the grant's resources.disk_mib, or the server's --sandbox-disk)", rel, n)
		}
		return FileEntry{}, fmt.Errorf("sandbox: write /workspace/%s: %w", rel, err)
	}
	if err := f.Chown(uid, gid); err != nil && !errors.Is(err, syscall.EPERM) {
		return FileEntry{}, fmt.Errorf("sandbox: write /workspace/%s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return FileEntry{}, fmt.Errorf("sandbox: write /workspace/%s: %w", rel, err)
	}
	// Rename replaces a link at rel itself, never what it points to.
	if err := r.Rename(tmp, rel); err != nil {
		return FileEntry{}, pathErr(rel, err)
	}
	done = true
	st, err := r.Lstat(rel)
	if err != nil {
		return FileEntry{}, pathErr(rel, err)
	}
	return FileEntry{Name: path.Base(rel), Path: rel, Type: "file", Size: n, ModifiedAt: st.ModTime()}, nil
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "folder"
	case m&fs.ModeSymlink != 0:
		return "link"
	}
	return "other"
}

func tarKind(h *tar.Header) string {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeLink:
		return "file"
	case tar.TypeDir:
		return "folder"
	case tar.TypeSymlink:
		return "link"
	}
	return "other"
}

func notAFile(p, what string) *FileError {
	return fileErr("not_a_file", "/workspace/%s is a %s, not a file", p, what)
}

func tooLarge(p string, size int64) *FileError {
	return fileErr("file_too_large", "/workspace/%s is %d bytes; the limit is %d bytes (%d MiB) a read or write", p, size, MaxFileReadBytes, MaxFileReadBytes>>20)
}

// pathErr names what os.Root refused: a link leading out of /workspace, or
// a name that is not a folder on the way.
func pathErr(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return notFoundIn(p)
	case errors.Is(err, syscall.ELOOP):
		return fileErr("link_refused", "/workspace/%s is a link: the files verbs never follow a link as the last name of a path", p)
	case strings.Contains(err.Error(), "escapes"):
		return fileErr("link_refused", "/workspace/%s goes through a link that leads out of /workspace", p)
	}
	return fmt.Errorf("sandbox: /workspace/%s: %w", p, err)
}

func archiveErr(ctx context.Context, p string, err error) error {
	var fe *FileError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(err, archive.ErrNotExist):
		return notFoundIn(p)
	case ctx.Err() != nil:
		return fmt.Errorf("sandbox: reading the archive for /workspace/%s took over %s", p, FilesTimeout)
	}
	return err
}
