package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// InvalidError is returned by Receive for an upload that a restore would
// refuse; nothing was replaced.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string {
	return fmt.Sprintf("archive: the upload is not an archive a restore accepts: %v", e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// Receive makes body (tar + gzip) id's archive, in one step and only once
// it passed the checks and limits of a restore: it is read into a temporary
// file of at most lim.MaxBytes (else *TooLargeError), restored for a trial
// into the empty folder scratch (which the caller removes), and refused
// with *InvalidError when that restore fails. The returned Info carries the
// archive's checksum.
func Receive(ctx context.Context, store Store, id string, body io.Reader, lim Limits, scratch string) (Info, error) {
	lim = lim.withDefaults()
	f, err := store.TempFile(id)
	if err != nil {
		return Info{}, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	sum := sha256.New()
	lw := &limitWriter{w: io.MultiWriter(f, sum), limit: lim.MaxBytes}
	if _, err := io.Copy(lw, body); err != nil {
		if lw.over {
			return Info{}, &TooLargeError{Limit: lim.MaxBytes}
		}
		return Info{}, fmt.Errorf("archive: receive %s: %w", id, err)
	}
	if err := f.Sync(); err != nil {
		return Info{}, fmt.Errorf("archive: receive %s: %w", id, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("archive: receive %s: %w", id, err)
	}
	if _, err := Restore(ctx, f, scratch, RestoreOptions{MaxExpandedBytes: lim.MaxExpandedBytes, MaxEntries: lim.MaxEntries}); err != nil {
		if ctx.Err() != nil {
			return Info{}, fmt.Errorf("archive: trial restore of %s: %w", id, err)
		}
		return Info{}, &InvalidError{Err: err}
	}
	if err := f.Close(); err != nil {
		return Info{}, fmt.Errorf("archive: receive %s: %w", id, err)
	}
	info, err := store.Put(ctx, id, f.Name())
	if err != nil {
		return Info{}, err
	}
	keep = true
	info.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return info, nil
}
