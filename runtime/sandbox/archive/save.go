package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Save archives dir as a new generation of id's archive (Info.Gen). The
// archive is written to a temporary file and only put in the store once
// complete; no archive that is there is replaced, so on any error
// (including *TooLargeError) the temporary file is removed and the store
// holds what it held.
func Save(ctx context.Context, store Store, id, dir string, lim Limits) (Info, Stats, error) {
	f, err := store.TempFile(id)
	if err != nil {
		return Info{}, Stats{}, err
	}
	st, err := Create(ctx, dir, f, lim)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return Info{}, st, err
	}
	info, err := store.Put(ctx, Ref{ID: id, Gen: NewGen()}, f.Name())
	if err != nil {
		os.Remove(f.Name())
		return Info{}, st, err
	}
	info.SHA256 = st.SHA256
	return info, st, nil
}

// Checksum returns the hex sha256 of the stored archive ref, to tell a
// complete archive from one that is not the one recorded.
func Checksum(ctx context.Context, store Store, ref Ref) (string, error) {
	rc, _, err := store.Open(ctx, ref)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", fmt.Errorf("archive: checksum %s: %w", ref, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Load restores the archive ref into dir (ErrNotExist when there is none).
func Load(ctx context.Context, store Store, ref Ref, dir string, opts RestoreOptions) (Stats, error) {
	rc, _, err := store.Open(ctx, ref)
	if err != nil {
		return Stats{}, err
	}
	defer rc.Close()
	return Restore(ctx, rc, dir, opts)
}
