package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/subako/subako/runtime/objstore"
	"github.com/subako/subako/runtime/objstore/s3test"
	"github.com/subako/subako/runtime/sandbox/archive"
)

// workspace makes a small folder tree to archive.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestS3StoreKeepsArchivesInTheBucket: an archive saved through the store is
// an object under <prefix>/archives/<id>.<generation>.tar.gz, restores file
// for file through another store on the same bucket (another replica's),
// and is gone after Delete.
func TestS3StoreKeepsArchivesInTheBucket(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	a := srv.Store(t, "team-a/subako")
	files := map[string]string{"main.go": "package main\n", "notes/todo.txt": "ship it\n"}
	info, _, err := archive.Save(ctx, a, "sbx_one", workspace(t, files), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Bytes == 0 || info.SHA256 == "" {
		t.Fatalf("Save answered %+v, want a size and a checksum", info)
	}
	if info.Gen == "" {
		t.Fatalf("Save answered %+v, want a generation", info)
	}
	obj, err := srv.Client(t).StatObject(ctx, srv.Bucket, "team-a/subako/archives/sbx_one."+info.Gen+".tar.gz", minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("the archive is not in the bucket under team-a/subako/archives/: %v", err)
	}
	if obj.Size != info.Bytes {
		t.Fatalf("object is %d bytes, Save said %d", obj.Size, info.Bytes)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(tempOf(t, a)), "*")); len(left) != 0 {
		t.Fatalf("temporary files left after the upload: %v", left)
	}

	// Another replica: its own temporary folder, the same bucket.
	b := srv.Store(t, "team-a/subako")
	st, err := b.Stat(ctx, info.Ref())
	if err != nil || st.Bytes != info.Bytes {
		t.Fatalf("Stat from another store = %+v, %v; want %d bytes", st, err, info.Bytes)
	}
	dir := t.TempDir()
	if _, err := archive.Load(ctx, b, info.Ref(), dir, archive.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir); len(got) != 2 || got["main.go"] != files["main.go"] || got["notes/todo.txt"] != files["notes/todo.txt"] {
		t.Fatalf("restored %v, want %v", got, files)
	}
	if sum, err := archive.Checksum(ctx, b, info.Ref()); err != nil || sum != info.SHA256 {
		t.Fatalf("checksum through the store = %s, %v; want %s", sum, err, info.SHA256)
	}

	// Another prefix sees nothing of it.
	if _, err := srv.Store(t, "team-b").Stat(ctx, info.Ref()); !errors.Is(err, archive.ErrNotExist) {
		t.Fatalf("Stat under another prefix = %v, want ErrNotExist", err)
	}
	if err := b.Delete(ctx, info.Ref()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Open(ctx, info.Ref()); !errors.Is(err, archive.ErrNotExist) {
		t.Fatalf("Open after Delete = %v, want ErrNotExist", err)
	}
	if err := a.Delete(ctx, info.Ref()); err != nil {
		t.Fatalf("deleting a missing archive: %v", err)
	}
}

// tempOf is a file name in a's temporary folder.
func tempOf(t *testing.T, s *objstore.S3) string {
	t.Helper()
	f, err := s.TempFile("probe")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Remove(f.Name())
	return f.Name()
}

// heapPeak samples the live heap until stop is called and returns the
// highest figure above the start.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var mu sync.Mutex
	peak := base
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				mu.Lock()
				peak = max(peak, ms.HeapAlloc)
				mu.Unlock()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peak - base
	}
}

// TestS3StoreStreamsALargeArchiveInBoundedMemory: a 200 MiB archive goes up
// in parts and comes down as a stream, each with a heap that grows by far
// less than the archive (at most 64 MiB: two 16 MiB parts and buffers).
func TestS3StoreStreamsALargeArchiveInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MiB through a real S3 server")
	}
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Store(t, "big")
	const size = 200 << 20
	f, err := s.TempFile("sbx_big")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(h.Sum(nil))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	const bound = 64 << 20

	stop := heapPeak()
	ref := archive.Ref{ID: "sbx_big", Gen: archive.NewGen()}
	info, err := s.Put(ctx, ref, f.Name())
	up := stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upload of %d MiB: heap grew by at most %.1f MiB", size>>20, float64(up)/(1<<20))
	if info.Bytes != size || info.SHA256 != want {
		t.Fatalf("Put = %d bytes sha256 %s, want %d and %s", info.Bytes, info.SHA256, size, want)
	}
	if up > bound {
		t.Fatalf("upload grew the heap by %d MiB, over %d MiB: it is not streamed", up>>20, bound>>20)
	}
	obj, err := srv.Client(t).StatObject(ctx, srv.Bucket, s.Key(ref), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(obj.ETag, "-") {
		t.Fatalf("ETag %q: a %d MiB archive should go up in parts (multipart ETags end in -<parts>)", obj.ETag, size>>20)
	}

	stop = heapPeak()
	rc, st, err := s.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	h.Reset()
	n, err := io.Copy(h, rc)
	rc.Close()
	down := stop()
	if err != nil || n != size || st.Bytes != size {
		t.Fatalf("download: %d bytes (Open said %d), %v; want %d", n, st.Bytes, err, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("downloaded sha256 %s, want %s", got, want)
	}
	t.Logf("download of %d MiB: heap grew by at most %.1f MiB", size>>20, float64(down)/(1<<20))
	if down > bound {
		t.Fatalf("download grew the heap by %d MiB, over %d MiB: it is not streamed", down>>20, bound>>20)
	}
}

// TestS3StoreDownIsUnavailableAndLosesNothing: with the server stopped every
// call answers an UnavailableError naming the store (never its secret),
// the old archive and the new one's temporary file are both kept, and once
// the server is back the same file goes up.
func TestS3StoreDownIsUnavailableAndLosesNothing(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Store(t, "down")
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a running store: %v", err)
	}
	v1 := map[string]string{"a.txt": "first\n"}
	first, _, err := archive.Save(ctx, s, "sbx_down", workspace(t, v1), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}

	srv.Stop(t)
	wantDown := func(op string, err error) {
		t.Helper()
		var u *archive.UnavailableError
		if !errors.As(err, &u) {
			t.Fatalf("%s with the store down = %v, want an UnavailableError", op, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, srv.URL("down")) || !strings.Contains(msg, srv.Endpoint) {
			t.Fatalf("%s: %q does not name the store %s at %s", op, msg, srv.URL("down"), srv.Endpoint)
		}
		if strings.Contains(msg, srv.SecretKey) {
			t.Fatalf("%s: the error shows the secret key: %q", op, msg)
		}
	}
	wantDown("Ping", s.Ping(ctx))
	_, err = s.Stat(ctx, first.Ref())
	wantDown("Stat", err)
	_, _, err = s.Open(ctx, first.Ref())
	wantDown("Open", err)
	wantDown("Delete", s.Delete(ctx, first.Ref()))
	_, err = s.List(ctx, "sbx_down")
	wantDown("List", err)

	// A new archive cannot go up: Put fails and leaves the file to its caller.
	f, err := s.TempFile("sbx_down")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Create(ctx, workspace(t, map[string]string{"a.txt": "second\n"}), f, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	second := archive.Ref{ID: "sbx_down", Gen: archive.NewGen()}
	_, err = s.Put(ctx, second, f.Name())
	wantDown("Put", err)
	if _, err := os.Stat(f.Name()); err != nil {
		t.Fatalf("the archive that could not go up is gone: %v", err)
	}

	srv.Restart(t)
	dir := t.TempDir()
	if _, err := archive.Load(ctx, s, first.Ref(), dir, archive.RestoreOptions{}); err != nil {
		t.Fatalf("the archive from before the outage: %v", err)
	}
	if got := readTree(t, dir); got["a.txt"] != "first\n" {
		t.Fatalf("after the outage the archive holds %v, want the first", got)
	}
	if _, err := s.Put(ctx, second, f.Name()); err != nil {
		t.Fatalf("Put once the store is back: %v", err)
	}
	dir = t.TempDir()
	if _, err := archive.Load(ctx, s, second, dir, archive.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir); got["a.txt"] != "second\n" {
		t.Fatalf("after the second Put the archive holds %v, want the second", got)
	}
}

// TestS3StoreRefusesAnObjectNotAsWritten: an object replaced behind
// Subako's back (other bytes under the recorded checksum) fails its read at
// the end instead of restoring something else.
func TestS3StoreRefusesAnObjectNotAsWritten(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Store(t, "")
	info, _, err := archive.Save(ctx, s, "sbx_t", workspace(t, map[string]string{"x": "original"}), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{'z'}, int(info.Bytes))
	_, err = srv.Client(t).PutObject(ctx, srv.Bucket, s.Key(info.Ref()), bytes.NewReader(other), int64(len(other)), minio.PutObjectOptions{
		UserMetadata: map[string]string{"Subako-Sha256": info.SHA256, "Subako-Bytes": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(ctx, info.Ref()); err == nil || !strings.Contains(err.Error(), "not the 1 written") {
		t.Fatalf("Open of an object whose size is not the one recorded = %v, want a refusal", err)
	}
	_, err = srv.Client(t).PutObject(ctx, srv.Bucket, s.Key(info.Ref()), bytes.NewReader(other), int64(len(other)), minio.PutObjectOptions{
		UserMetadata: map[string]string{"Subako-Sha256": info.SHA256},
	})
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Open(ctx, info.Ref())
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	if err == nil || !strings.Contains(err.Error(), "not the "+info.SHA256+" written") {
		t.Fatalf("reading an object with other bytes = %v, want a checksum refusal", err)
	}
}

// TestS3StoreWithWrongKeysSaysSoWithoutThem: refused credentials are a
// store that is unavailable, and the answer shows neither key.
func TestS3StoreWithWrongKeysSaysSoWithoutThem(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config("", t.TempDir())
	cfg.SecretKey = "not-the-secret-4b1d"
	s, err := objstore.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Ping(context.Background())
	var u *archive.UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("Ping with a wrong secret = %v, want UnavailableError", err)
	}
	if strings.Contains(err.Error(), cfg.SecretKey) || strings.Contains(err.Error(), srv.SecretKey) {
		t.Fatalf("the error shows a secret: %q", err)
	}
	t.Logf("wrong secret: %v", err)
}

// TestConfigCheckNamesTheFlag: settings are refused at start, each error
// naming the flag to fix, and a secret typed into the URL is not echoed.
func TestConfigCheckNamesTheFlag(t *testing.T) {
	ok := objstore.Config{URL: "s3://subako-archives/prod", Endpoint: "https://s3.example.com", AccessKey: "AK", SecretKey: "sk-7f3e9"}
	if err := ok.Check(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*objstore.Config)
		want string
	}{
		{"not s3", func(c *objstore.Config) { c.URL = "https://bucket/prefix" }, "--archive-store"},
		{"no bucket", func(c *objstore.Config) { c.URL = "s3:///prefix" }, "--archive-store"},
		{"bad bucket", func(c *objstore.Config) { c.URL = "s3://Bad_Bucket/x" }, "--archive-store"},
		{"dot dot", func(c *objstore.Config) { c.URL = "s3://bucket/a/../b" }, "--archive-store"},
		{"keys in url", func(c *objstore.Config) { c.URL = "s3://me:hunter2@bucket/x" }, "--archive-store"},
		{"endpoint path", func(c *objstore.Config) { c.Endpoint = "https://s3.example.com/bucket" }, "--s3-endpoint"},
		{"plain http", func(c *objstore.Config) { c.Endpoint = "http://127.0.0.1:8333" }, "--s3-insecure"},
		{"ftp", func(c *objstore.Config) { c.Endpoint = "ftp://host" }, "--s3-endpoint"},
		{"no secret", func(c *objstore.Config) { c.SecretKey = "" }, "--s3-secret-key"},
		{"no access key", func(c *objstore.Config) { c.AccessKey = "" }, "--s3-access-key"},
		{"region", func(c *objstore.Config) { c.Region = "us east" }, "--s3-region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "sk-7f3e9") {
				t.Fatalf("the error shows a secret: %q", err)
			}
		})
	}
	c := ok
	c.Endpoint, c.Insecure = "http://127.0.0.1:8333", true
	if err := c.Check(); err != nil {
		t.Fatalf("http with --s3-insecure: %v", err)
	}
}

// TestS3StoreKeepsEachGeneration: a second archive of a sandbox is a new
// object beside the first, which stays as written until it is deleted;
// List finds both and an archive from before generations (the one object
// <id>.tar.gz), but not another sandbox's whose id starts the same;
// DeleteAll leaves none of them, and the other sandbox's alone.
func TestS3StoreKeepsEachGeneration(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	s := srv.Store(t, "gens")
	first, _, err := archive.Save(ctx, s, "sbx_g", workspace(t, map[string]string{"a.txt": "first\n"}), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := archive.Save(ctx, s, "sbx_g", workspace(t, map[string]string{"a.txt": "second\n"}), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Gen == second.Gen {
		t.Fatalf("two archives of one sandbox share generation %q", first.Gen)
	}
	for ref, want := range map[archive.Ref]string{first.Ref(): "first\n", second.Ref(): "second\n"} {
		dir := t.TempDir()
		if _, err := archive.Load(ctx, s, ref, dir, archive.RestoreOptions{}); err != nil {
			t.Fatalf("generation %s: %v", ref.Gen, err)
		}
		if got := readTree(t, dir)["a.txt"]; got != want {
			t.Fatalf("generation %s holds %q, want %q", ref.Gen, got, want)
		}
	}
	// An archive written before generations, and another sandbox's.
	old := bytes.NewReader(archiveBytes(t, map[string]string{"a.txt": "before generations\n"}))
	if _, err := srv.Client(t).PutObject(ctx, srv.Bucket, "gens/archives/sbx_g.tar.gz", old, old.Size(), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	other, _, err := archive.Save(ctx, s, "sbx_g_other", workspace(t, map[string]string{"a.txt": "other\n"}), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := archive.Load(ctx, s, archive.Ref{ID: "sbx_g"}, dir, archive.RestoreOptions{}); err != nil || readTree(t, dir)["a.txt"] != "before generations\n" {
		t.Fatalf("the archive from before generations: %v, %v", readTree(t, dir), err)
	}
	all, err := s.List(ctx, "sbx_g")
	if err != nil {
		t.Fatal(err)
	}
	gens := map[string]bool{}
	for _, i := range all {
		gens[i.Gen] = i.ID == "sbx_g" && i.Bytes > 0
	}
	if len(all) != 3 || !gens[""] || !gens[first.Gen] || !gens[second.Gen] {
		t.Fatalf("List(sbx_g) = %+v; want its two generations and the one from before", all)
	}
	if err := archive.DeleteAll(ctx, s, "sbx_g"); err != nil {
		t.Fatal(err)
	}
	if all, err := s.List(ctx, "sbx_g"); err != nil || len(all) != 0 {
		t.Fatalf("after DeleteAll: %+v, %v; want none", all, err)
	}
	if _, err := s.Stat(ctx, other.Ref()); err != nil {
		t.Fatalf("DeleteAll(sbx_g) took sbx_g_other's archive: %v", err)
	}
}

// archiveBytes is a tar + gzip archive of files.
func archiveBytes(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := archive.Create(context.Background(), workspace(t, files), &buf, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
