package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Ref names one archive of a sandbox: its id and the generation its record
// names. Every archive is a new generation (NewGen, chosen before it is
// uploaded), so writing an archive never replaces one a record may name:
// a replica's late upload cannot overwrite the archive another replica
// recorded since. Gen "" is the one archive per id kept before generations
// (<id>.tar.gz), still read for records written then.
type Ref struct{ ID, Gen string }

func (r Ref) String() string {
	if r.Gen == "" {
		return r.ID
	}
	return r.ID + "." + r.Gen
}

// NewGen returns a fresh generation: 16 random bytes in hex, never one an
// earlier archive of any sandbox had.
func NewGen() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Info describes a stored archive.
type Info struct {
	ID      string
	Gen     string
	Bytes   int64
	ModTime time.Time
	// SHA256 is the archive's hex checksum when the caller just wrote it
	// (Save, Receive); Stat and Open leave it empty.
	SHA256 string
}

// Ref is the archive info describes.
func (i Info) Ref() Ref { return Ref{ID: i.ID, Gen: i.Gen} }

// Store keeps a sandbox's archives, one object per generation. Put makes a
// finished temporary file an archive in one step, so a reader sees a whole
// archive or none. The caller records the new generation and only then
// deletes the one its record named before: a crash between leaves an
// unrecorded generation (List finds it), never a record naming a missing
// archive.
type Store interface {
	// TempFile creates a file for a new archive of id. For the local store it
	// lies in the archive folder, so Put is a rename.
	TempFile(id string) (*os.File, error)
	// Put makes the closed temporary file tempPath the archive ref.
	Put(ctx context.Context, ref Ref, tempPath string) (Info, error)
	// Open returns the archive ref, or ErrNotExist.
	Open(ctx context.Context, ref Ref) (io.ReadCloser, Info, error)
	// Stat returns the archive ref's info, or ErrNotExist.
	Stat(ctx context.Context, ref Ref) (Info, error)
	// Delete removes the archive ref; deleting a missing archive is not an
	// error.
	Delete(ctx context.Context, ref Ref) error
	// List returns every archive of id, recorded or not, the one of
	// before generations included.
	List(ctx context.Context, id string) ([]Info, error)
}

// DeleteAll removes every archive of id.
func DeleteAll(ctx context.Context, store Store, id string) error {
	infos, err := store.List(ctx, id)
	if err != nil {
		return err
	}
	for _, info := range infos {
		if err := store.Delete(ctx, info.Ref()); err != nil {
			return err
		}
	}
	return nil
}

// ValidRef reports whether ref's id and generation are each 1-128 of A-Z,
// a-z, 0-9, _ and - (the generation may be ""): no dot, so
// "<id>.<gen>.tar.gz" names one archive of one sandbox.
func ValidRef(ref Ref) error {
	if !validID.MatchString(ref.ID) {
		return fmt.Errorf("archive: id %q: must be 1-128 of A-Z, a-z, 0-9, _ and -", ref.ID)
	}
	if ref.Gen != "" && !validID.MatchString(ref.Gen) {
		return fmt.Errorf("archive: generation %q of %s: must be 1-128 of A-Z, a-z, 0-9, _ and -", ref.Gen, ref.ID)
	}
	return nil
}

// FileName is the archive ref's file (and object) name: <id>.tar.gz before
// generations, <id>.<gen>.tar.gz since.
func FileName(ref Ref) string { return ref.String() + suffix }

// ParseFileName is FileName's inverse for an archive of id; ok is false for
// any other name (another sandbox's archive, a temporary file).
func ParseFileName(id, name string) (ref Ref, ok bool) {
	rest, found := strings.CutPrefix(name, id)
	if !found || !strings.HasSuffix(rest, suffix) {
		return Ref{}, false
	}
	rest = strings.TrimSuffix(rest, suffix)
	ref = Ref{ID: id}
	if rest != "" {
		gen, found := strings.CutPrefix(rest, ".")
		if !found {
			return Ref{}, false
		}
		ref.Gen = gen
	}
	return ref, ValidRef(ref) == nil
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

// Local keeps archives as <id>.<gen>.tar.gz (<id>.tar.gz before
// generations) in one folder.
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

func (l *Local) path(ref Ref) (string, error) {
	if err := ValidRef(ref); err != nil {
		return "", err
	}
	return filepath.Join(l.dir, FileName(ref)), nil
}

// TempFile implements Store.
func (l *Local) TempFile(id string) (*os.File, error) {
	p, err := l.path(Ref{ID: id})
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
func (l *Local) Put(ctx context.Context, ref Ref, tempPath string) (Info, error) {
	p, err := l.path(ref)
	if err != nil {
		return Info{}, err
	}
	if filepath.Dir(tempPath) != l.dir {
		return Info{}, fmt.Errorf("archive: put %s: %s is not in %s", ref, tempPath, l.dir)
	}
	if err := os.Rename(tempPath, p); err != nil {
		return Info{}, fmt.Errorf("archive: put %s: %w", ref, err)
	}
	if d, err := os.Open(l.dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return l.Stat(ctx, ref)
}

// Open implements Store.
func (l *Local) Open(ctx context.Context, ref Ref) (io.ReadCloser, Info, error) {
	p, err := l.path(ref)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, ErrNotExist
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("archive: open %s: %w", ref, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("archive: stat %s: %w", ref, err)
	}
	return f, Info{ID: ref.ID, Gen: ref.Gen, Bytes: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Stat implements Store.
func (l *Local) Stat(_ context.Context, ref Ref) (Info, error) {
	p, err := l.path(ref)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, ErrNotExist
	}
	if err != nil {
		return Info{}, fmt.Errorf("archive: stat %s: %w", ref, err)
	}
	return Info{ID: ref.ID, Gen: ref.Gen, Bytes: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete implements Store.
func (l *Local) Delete(_ context.Context, ref Ref) error {
	p, err := l.path(ref)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("archive: delete %s: %w", ref, err)
	}
	return nil
}

// List implements Store.
func (l *Local) List(_ context.Context, id string) ([]Info, error) {
	if err := ValidRef(Ref{ID: id}); err != nil {
		return nil, err
	}
	names, err := filepath.Glob(filepath.Join(l.dir, id+"*"+suffix))
	if err != nil {
		return nil, fmt.Errorf("archive: list %s: %w", id, err)
	}
	var out []Info
	for _, p := range names {
		ref, ok := ParseFileName(id, filepath.Base(p))
		if !ok {
			continue // another sandbox's (id is its prefix)
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("archive: list %s: %w", id, err)
		}
		out = append(out, Info{ID: id, Gen: ref.Gen, Bytes: fi.Size(), ModTime: fi.ModTime()})
	}
	return out, nil
}
