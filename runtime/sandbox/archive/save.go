package archive

import (
	"context"
	"os"
)

// Save archives dir as id's new archive. The archive is written to a
// temporary file and only put in place once complete; on any error
// (including *TooLargeError) the temporary file is removed and the previous
// archive is left as it was.
func Save(ctx context.Context, store Store, id, dir string, maxBytes int64) (Info, Stats, error) {
	f, err := store.TempFile(id)
	if err != nil {
		return Info{}, Stats{}, err
	}
	st, err := Create(ctx, dir, f, maxBytes)
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
	return info, st, nil
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
