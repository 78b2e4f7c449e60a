package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// InvalidError is returned by Stage for an upload that a restore would
// refuse; nothing was replaced.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string {
	return fmt.Sprintf("archive: the upload is not an archive a restore accepts: %v", e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// Staged is an uploaded archive that passed its checks, waiting in a
// temporary file of the store to become id's archive.
type Staged struct {
	store  Store
	id     string
	path   string
	sha256 string
}

// Stage reads body (tar + gzip) into a temporary file of at most
// lim.MaxBytes (else *TooLargeError) and restores it for a trial into the
// empty folder scratch, which the caller removes: an archive a restore
// would refuse is refused with *InvalidError. Nothing is replaced until
// Commit; Discard drops it.
func Stage(ctx context.Context, store Store, id string, body io.Reader, lim Limits, scratch string) (*Staged, error) {
	lim = lim.withDefaults()
	f, err := store.TempFile(id)
	if err != nil {
		return nil, err
	}
	s := &Staged{store: store, id: id, path: f.Name()}
	if err := s.fill(ctx, f, body, lim, scratch); err != nil {
		f.Close()
		s.Discard()
		return nil, err
	}
	if err := f.Close(); err != nil {
		s.Discard()
		return nil, fmt.Errorf("archive: receive %s: %w", id, err)
	}
	return s, nil
}

func (s *Staged) fill(ctx context.Context, f *os.File, body io.Reader, lim Limits, scratch string) error {
	sum := sha256.New()
	lw := &limitWriter{w: io.MultiWriter(f, sum), limit: lim.MaxBytes}
	if _, err := io.Copy(lw, body); err != nil {
		if lw.over {
			return &TooLargeError{Limit: lim.MaxBytes}
		}
		return fmt.Errorf("archive: receive %s: %w", s.id, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("archive: receive %s: %w", s.id, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("archive: receive %s: %w", s.id, err)
	}
	opts := RestoreOptions{MaxExpandedBytes: lim.MaxExpandedBytes, MaxEntries: lim.MaxEntries}
	if _, err := Restore(ctx, f, scratch, opts); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("archive: trial restore of %s: %w", s.id, err)
		}
		return &InvalidError{Err: err}
	}
	s.sha256 = hex.EncodeToString(sum.Sum(nil))
	return nil
}

// Commit makes the staged file a new generation of id's archive
// (Info.Gen) in one step; the archive a record names stays as it is.
func (s *Staged) Commit(ctx context.Context) (Info, error) {
	info, err := s.store.Put(ctx, Ref{ID: s.id, Gen: NewGen()}, s.path)
	if err != nil {
		return Info{}, err
	}
	s.path = ""
	info.SHA256 = s.sha256
	return info, nil
}

// Discard removes the staged file unless it was committed.
func (s *Staged) Discard() {
	if s.path != "" {
		os.Remove(s.path)
		s.path = ""
	}
}
