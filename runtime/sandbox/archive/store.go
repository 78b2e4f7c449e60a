package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Info describes a stored archive.
type Info struct {
	ID      string
	Bytes   int64
	ModTime time.Time
	// SHA256 is the archive's hex checksum when the caller just wrote it
	// (Save, Receive); Stat and Open leave it empty.
	SHA256 string
}

// Store keeps one archive per sandbox id. Put makes a finished temporary file
// the archive in one step, so readers see the old archive or the new one,
// never a partial one.
type Store interface {
	// TempFile creates a file for a new archive of id. For the local store it
	// lies in the archive folder, so Put is a rename.
	TempFile(id string) (*os.File, error)
	// Put replaces id's archive with the closed temporary file tempPath.
	Put(ctx context.Context, id, tempPath string) (Info, error)
	// Open returns id's archive, or ErrNotExist.
	Open(ctx context.Context, id string) (io.ReadCloser, Info, error)
	// Stat returns id's archive's info, or ErrNotExist.
	Stat(ctx context.Context, id string) (Info, error)
	// Delete removes id's archive; deleting a missing archive is not an error.
	Delete(ctx context.Context, id string) error
}

// validID accepts 1-128 of A-Z, a-z, 0-9, _ and -. Not a regexp: compiling
// `{1,128}` costs about 10 ms and 1,700 allocations at every start of every
// program that imports this package, sandbox agents included.
var validID = idChecker{}

type idChecker struct{}

func (idChecker) MatchString(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

const (
	suffix    = ".tar.gz"
	tmpMarker = ".tmp-"
)

// Local keeps archives as <id>.tar.gz in one folder.
type Local struct{ dir string }

// NewLocal opens (creating) an archive folder and removes temporary files a
// crashed archiving left behind; finished archives are never touched.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("archive: create %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), suffix+tmpMarker) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("archive: remove leftover %s: %w", e.Name(), err)
			}
		}
	}
	return &Local{dir: dir}, nil
}

func (l *Local) path(id string) (string, error) {
	if !validID.MatchString(id) {
		return "", fmt.Errorf("archive: id %q: must be 1-128 of A-Z, a-z, 0-9, _ and -", id)
	}
	return filepath.Join(l.dir, id+suffix), nil
}

// TempFile implements Store.
func (l *Local) TempFile(id string) (*os.File, error) {
	p, err := l.path(id)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(l.dir, filepath.Base(p)+tmpMarker+"*")
	if err != nil {
		return nil, fmt.Errorf("archive: temp file for %s: %w", id, err)
	}
	return f, nil
}

// Put implements Store: a rename, then an fsync of the folder so the rename
// survives a power cut.
func (l *Local) Put(ctx context.Context, id, tempPath string) (Info, error) {
	p, err := l.path(id)
	if err != nil {
		return Info{}, err
	}
	if filepath.Dir(tempPath) != l.dir {
		return Info{}, fmt.Errorf("archive: put %s: %s is not in %s", id, tempPath, l.dir)
	}
	if err := os.Rename(tempPath, p); err != nil {
		return Info{}, fmt.Errorf("archive: put %s: %w", id, err)
	}
	if d, err := os.Open(l.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return l.Stat(ctx, id)
}

// Open implements Store.
func (l *Local) Open(ctx context.Context, id string) (io.ReadCloser, Info, error) {
	p, err := l.path(id)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, ErrNotExist
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("archive: open %s: %w", id, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("archive: stat %s: %w", id, err)
	}
	return f, Info{ID: id, Bytes: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Stat implements Store.
func (l *Local) Stat(_ context.Context, id string) (Info, error) {
	p, err := l.path(id)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, ErrNotExist
	}
	if err != nil {
		return Info{}, fmt.Errorf("archive: stat %s: %w", id, err)
	}
	return Info{ID: id, Bytes: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete implements Store.
func (l *Local) Delete(_ context.Context, id string) error {
	p, err := l.path(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("archive: delete %s: %w", id, err)
	}
	return nil
}
