package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Save archives dir as id's new archive. The archive is written to a
// temporary file and only put in place once complete; on any error
// (including *TooLargeError) the temporary file is removed and the previous
// archive is left as it was.
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
	info, err := store.Put(ctx, id, f.Name())
	if err != nil {
		os.Remove(f.Name())
		return Info{}, st, err
	}
	info.SHA256 = st.SHA256
	return info, st, nil
}

// Checksum returns the hex sha256 of id's stored archive, to tell a complete
// archive from one that is not the one recorded.
func Checksum(ctx context.Context, store Store, id string) (string, error) {
	rc, _, err := store.Open(ctx, id)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", fmt.Errorf("archive: checksum %s: %w", id, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Load restores id's archive into dir (ErrNotExist when there is none).
func Load(ctx context.Context, store Store, id, dir string, opts RestoreOptions) (Stats, error) {
	rc, _, err := store.Open(ctx, id)
	if err != nil {
		return Stats{}, err
	}
	defer rc.Close()
	return Restore(ctx, rc, dir, opts)
}
