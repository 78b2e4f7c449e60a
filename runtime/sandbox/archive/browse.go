package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// ErrStop ends Browse early without an error.
var ErrStop = errors.New("archive: stop browsing")

// Browse reads the stored archive ref entry by entry, without unpacking it:
// visit gets each entry's cleaned name (never "", never "..", never
// absolute) and header, and a reader of a file's content valid until it
// returns. Returning ErrStop ends the walk early.
func Browse(ctx context.Context, store Store, ref Ref, visit func(name string, hdr *tar.Header, r io.Reader) error) error {
	rc, _, err := store.Open(ctx, ref)
	if err != nil {
		return err
	}
	defer rc.Close()
	// The deadline holds inside an entry too: skipping a large file
	// decompresses all of it, which the check between entries never sees.
	defer context.AfterFunc(ctx, func() { rc.Close() })()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return fmt.Errorf("archive: not a gzip archive: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) && ctx.Err() == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err != nil {
			return fmt.Errorf("archive: read: %w", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil || name == "" {
			continue // refused by a restore too; never shown
		}
		if err := visit(name, hdr, tr); errors.Is(err, ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
