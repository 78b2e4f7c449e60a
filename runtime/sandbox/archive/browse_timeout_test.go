package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/subako/subako/runtime/sandbox/archive"
)

// gzipMember compresses b as one gzip member (members concatenate into one
// stream).
func gzipMember(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return out.Bytes()
}

// Browsing keeps to its caller's deadline inside one entry too: an archive
// of a few MB holding a 16 GiB file of zeros (which the files verbs skip
// to reach the next entry) ends at the deadline, not after decompressing
// it all (Sandbox.files promises 30 s a call, and viewers may list).
func TestBrowseStopsAtTheDeadlineInsideAnEntry(t *testing.T) {
	const chunk, chunks = 64 << 20, 256
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: chunk * chunks, Format: tar.FormatPAX}); err != nil {
		t.Fatal(err)
	}
	zeros := gzipMember(t, make([]byte, chunk))
	var file bytes.Buffer
	file.Write(gzipMember(t, hdr.Bytes()))
	for range chunks {
		file.Write(zeros)
	}
	file.Write(gzipMember(t, make([]byte, 1024)))

	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := store.TempFile("sbx_bomb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(file.Bytes()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := store.Put(context.Background(), archive.Ref{ID: "sbx_bomb"}, f.Name()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = archive.Browse(ctx, store, archive.Ref{ID: "sbx_bomb"}, func(string, *tar.Header, io.Reader) error { return nil })
	took := time.Since(start)
	if err == nil {
		t.Errorf("browsing past the deadline ended without an error")
	}
	if took > 3*time.Second {
		t.Errorf("browsing with a 300 ms deadline took %s (%d MB archive, %d GiB inside)", took.Round(time.Millisecond), file.Len()>>20, chunk*chunks>>30)
	}
}
