package volume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Info describes one stored file.
type Info struct {
	Path     string
	Size     int64
	SHA256   string // empty when the store did not read the file
	Modified time.Time
}

// Errors a Store answers with.
var (
	ErrNotFound = errors.New("volume: no such file")
	// ErrNotFile: the path names a folder, a link or a device, or one of its
	// parents is a file.
	ErrNotFile = errors.New("volume: not a regular file")
)

// TooLargeError refuses a file over the size a Put allows.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("volume: the file is over its %d byte limit", e.Limit)
}

// ReadError is an upload whose body could not be read to its end (the
// client went away, the connection broke): nothing was written.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "volume: read the upload: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Store keeps sessions' volumes. Put is atomic: a reader, a crash or a kill
// mid-write sees the old file or the new one, never part of either. The
// local store is the only one today; object storage can implement the same
// methods (LocalDir then answers false, and functions get no /volume).
type Store interface {
	Put(ctx context.Context, session, path string, r io.Reader, maxBytes int64) (Info, error)
	Open(ctx context.Context, session, path string) (io.ReadCloser, Info, error)
	// Hash reads a file to describe it with its digest (after a function wrote it).
	Hash(ctx context.Context, session, path string) (Info, error)
	Delete(ctx context.Context, session, path string) error
	DeleteAll(ctx context.Context, session string) error
	// LocalDir is the folder holding the session's files on this machine,
	// created if need be, for mounting into a function.
	LocalDir(session string) (string, bool)
}

// Local keeps each session's volume under Dir/<session>/files, with the
// files being written in Dir/<session>/tmp (same file system, so a rename
// publishes them at once).
type Local struct{ Dir string }

var sessionID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// NewLocal prepares dir and drops what uploads cut short by a crash left in
// the sessions' tmp folders.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("volume: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("volume: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			os.RemoveAll(filepath.Join(dir, e.Name(), "tmp"))
		}
	}
	return &Local{Dir: dir}, nil
}

func (l *Local) sessionDir(session string) (string, error) {
	if !sessionID.MatchString(session) {
		return "", fmt.Errorf("volume: bad session id %q", session)
	}
	return filepath.Join(l.Dir, session), nil
}

// root opens the session's folder as an os.Root: no path, link included,
// leads out of it.
func (l *Local) root(session string, create bool) (*os.Root, error) {
	dir, err := l.sessionDir(session)
	if err != nil {
		return nil, err
	}
	if create {
		if err := os.MkdirAll(filepath.Join(dir, "files"), 0o750); err != nil {
			return nil, fmt.Errorf("volume: %w", err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
			return nil, fmt.Errorf("volume: %w", err)
		}
	}
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	return r, err
}

// LocalDir implements Store.
func (l *Local) LocalDir(session string) (string, bool) {
	r, err := l.root(session, true)
	if err != nil {
		return "", false
	}
	r.Close()
	dir, _ := l.sessionDir(session)
	return filepath.Join(dir, "files"), true
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, session, p string, body io.Reader, maxBytes int64) (Info, error) {
	if err := CheckPath(p); err != nil {
		return Info{}, err
	}
	r, err := l.root(session, true)
	if err != nil {
		return Info{}, err
	}
	defer r.Close()
	tmpName := fmt.Sprintf("tmp/put-%d-%s", time.Now().UnixNano(), strings.ReplaceAll(path.Base(p), "/", "_"))
	if len(tmpName) > 200 {
		tmpName = tmpName[:200]
	}
	f, err := r.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return Info{}, fmt.Errorf("volume: %w", err)
	}
	published := false
	defer func() {
		if !published {
			f.Close()
			r.Remove(tmpName)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(ctxReader{ctx, body}, maxBytes+1))
	if err != nil {
		return Info{}, &ReadError{Err: err}
	}
	if n > maxBytes {
		return Info{}, &TooLargeError{Limit: maxBytes}
	}
	if err := f.Sync(); err != nil {
		return Info{}, fmt.Errorf("volume: %w", err)
	}
	if err := f.Close(); err != nil {
		return Info{}, fmt.Errorf("volume: %w", err)
	}
	dest := "files/" + p
	if dir := path.Dir(p); dir != "." {
		if err := r.MkdirAll("files/"+dir, 0o750); err != nil {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
				return Info{}, ErrNotFile
			}
			return Info{}, fmt.Errorf("volume: %w", err)
		}
	}
	if st, err := r.Lstat(dest); err == nil && !st.Mode().IsRegular() {
		return Info{}, ErrNotFile
	}
	if err := r.Rename(tmpName, dest); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
			return Info{}, ErrNotFile
		}
		return Info{}, fmt.Errorf("volume: %w", err)
	}
	published = true
	syncDir(r, path.Dir(dest))
	st, err := r.Lstat(dest)
	if err != nil {
		return Info{}, fmt.Errorf("volume: %w", err)
	}
	return Info{Path: p, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), Modified: st.ModTime()}, nil
}

func syncDir(r *os.Root, dir string) {
	if d, err := r.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// openFile opens a regular file of the volume, never through a link.
func (l *Local) openFile(session, p string) (*os.File, fs.FileInfo, error) {
	if err := CheckPath(p); err != nil {
		return nil, nil, err
	}
	r, err := l.root(session, false)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	st, err := r.Lstat("files/" + p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, nil, ErrNotFound
	case err != nil:
		return nil, nil, fmt.Errorf("volume: %w", err)
	case !st.Mode().IsRegular():
		return nil, nil, ErrNotFile
	}
	// O_NONBLOCK: a session sandbox writing the folder may swap the file
	// for a fifo after the Lstat, and opening a fifo to read waits for a
	// writer forever (holding the session's volume lock in a call's sync).
	// What was opened is checked again.
	f, err := r.OpenFile("files/"+p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("volume: %w", err)
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("volume: %w", err)
		}
		return nil, nil, ErrNotFile
	}
	return f, st, nil
}

// Open implements Store.
func (l *Local) Open(ctx context.Context, session, p string) (io.ReadCloser, Info, error) {
	f, st, err := l.openFile(session, p)
	if err != nil {
		return nil, Info{}, err
	}
	return f, Info{Path: p, Size: st.Size(), Modified: st.ModTime()}, nil
}

// Hash implements Store.
func (l *Local) Hash(ctx context.Context, session, p string) (Info, error) {
	f, st, err := l.openFile(session, p)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return Info{}, fmt.Errorf("volume: %w", err)
	}
	return Info{Path: p, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), Modified: st.ModTime()}, nil
}

// Delete implements Store; the folders it empties go with it.
func (l *Local) Delete(ctx context.Context, session, p string) error {
	if err := CheckPath(p); err != nil {
		return err
	}
	r, err := l.root(session, false)
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Lstat("files/" + p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("volume: %w", err)
	case st.IsDir():
		return ErrNotFile
	}
	if err := r.Remove("files/" + p); err != nil {
		return fmt.Errorf("volume: %w", err)
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if r.Remove("files/"+dir) != nil { // not empty: kept
			break
		}
	}
	return nil
}

// DeleteAll implements Store.
func (l *Local) DeleteAll(ctx context.Context, session string) error {
	dir, err := l.sessionDir(session)
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// Walk lists the regular files of a local volume folder (links and
// anything else are skipped), at most max of them, through an os.Root
// (ScanDir): a folder a session sandbox swaps for a link mid-walk lists
// nothing outside the volume.
func Walk(dir string, max int) ([]Info, error) {
	scan, err := ScanDir(dir, max, 5*time.Second, false, nil)
	out := make([]Info, 0, len(scan.Files))
	for p, st := range scan.Files {
		out = append(out, Info{Path: p, Size: st.Size, Modified: st.Mod})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// ctxReader stops a copy when its context ends (a client gone mid-upload).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
