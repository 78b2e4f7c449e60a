package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripKeepsFilesModesAndSafeLinks(t *testing.T) {
	src := t.TempDir()
	write(t, filepath.Join(src, "README"), "hello\n", 0o644)
	write(t, filepath.Join(src, "bin/run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	mtime := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(src, "README"), mtime, mtime)
	os.MkdirAll(filepath.Join(src, "empty"), 0o750)
	os.MkdirAll(filepath.Join(src, ".venv/bin"), 0o755)
	links := map[string]string{
		"bin/readme":        "../README",
		".venv/bin/python3": "/usr/bin/python3",
		"abs-inside":        "/workspace/README",
		"escape-relative":   "../../etc/passwd",
		"escape-absolute":   "/etc/shadow",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	st, err := Create(context.Background(), src, &buf, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(st.Skipped, ","); got != "escape-absolute,escape-relative,pipe" {
		t.Errorf("skipped = %q, want the two escaping links and the pipe", got)
	}
	dst := t.TempDir()
	if _, err := Restore(context.Background(), &buf, dst, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "bin/readme")); string(b) != "hello\n" {
		t.Errorf("bin/readme through its symlink = %q", b)
	}
	fi, err := os.Stat(filepath.Join(dst, "bin/run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/run.sh mode = %v, %v; want 0755", fi.Mode(), err)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "README")); !fi.ModTime().Equal(mtime) {
		t.Errorf("README mtime = %v, want %v (make relies on it)", fi.ModTime(), mtime)
	}
	if target, _ := os.Readlink(filepath.Join(dst, ".venv/bin/python3")); target != "/usr/bin/python3" {
		t.Errorf("venv python link = %q", target)
	}
	if fi, err := os.Stat(filepath.Join(dst, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("empty folder not restored: %v", err)
	}
}

type entry struct {
	name, link string
	typ        byte
	body       string
}

func tarGz(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	zw.Close()
	return &buf
}

func TestRestoreRefusesEscapes(t *testing.T) {
	file := func(name string) entry { return entry{name: name, typ: tar.TypeReg, body: "x"} }
	tests := []struct {
		name    string
		entries []entry
		want    string
	}{
		{"dot-dot", []entry{file("../evil")}, `"../evil": '..' is refused`},
		{"dot-dot inside", []entry{file("a/../../evil")}, `"a/../../evil": '..' is refused`},
		{"absolute", []entry{file("/tmp/evil")}, `"/tmp/evil": absolute paths are refused`},
		{"symlink climbing out", []entry{{name: "l", link: "../../etc", typ: tar.TypeSymlink}}, `"l": symlink to "../../etc" points out`},
		{"symlink to host etc", []entry{{name: "l", link: "/etc/passwd", typ: tar.TypeSymlink}}, `"l": symlink to "/etc/passwd" points out`},
		{"hard link out", []entry{{name: "h", link: "../x", typ: tar.TypeLink}}, `"h": hard link to "../x"`},
		{"hard link absolute", []entry{{name: "h", link: "/etc/shadow", typ: tar.TypeLink}}, `"h": hard link to "/etc/shadow"`},
		{"char device", []entry{{name: "null", typ: tar.TypeChar}}, `"null": device files are refused`},
		{"block device", []entry{{name: "sda", typ: tar.TypeBlock}}, `"sda": device files are refused`},
		{"fifo", []entry{{name: "p", typ: tar.TypeFifo}}, `"p": named pipes are refused`},
		{"beneath symlink", []entry{{name: "d", link: ".", typ: tar.TypeSymlink}, file("d/x")}, `"d/x": lies beneath the symlink "d"`},
		{"file over symlink", []entry{{name: "f", link: "target", typ: tar.TypeSymlink}, file("f")}, `"f": would write through the symlink`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "ws")
			os.Mkdir(dst, 0o755)
			_, err := Restore(context.Background(), tarGz(t, tc.entries...), dst, RestoreOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %s", err, tc.want)
			}
			for _, outside := range []string{"evil", "x", "target"} {
				if _, err := os.Lstat(filepath.Join(parent, outside)); err == nil {
					t.Errorf("%s was written outside the workspace", outside)
				}
			}
		})
	}
}

func TestRestoreStopsAtExpandedLimit(t *testing.T) {
	buf := tarGz(t, entry{name: "big", typ: tar.TypeReg, body: strings.Repeat("0", 4096)})
	_, err := Restore(context.Background(), buf, t.TempDir(), RestoreOptions{MaxExpandedBytes: 1024})
	if err == nil || !strings.Contains(err.Error(), "1024-byte limit (max_expanded_bytes)") {
		t.Fatalf("error = %v, want the expanded limit named", err)
	}
}

func randomFile(t testing.TB, path string, size int) {
	b := make([]byte, size)
	rand.Read(b)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSaveOverLimitKeepsPreviousArchive(t *testing.T) {
	ctx := context.Background()
	store, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	write(t, filepath.Join(ws, "notes.txt"), "version one", 0o644)
	first, _, err := Save(ctx, store, "sbx1", ws, Limits{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	randomFile(t, filepath.Join(ws, "noise.bin"), 2<<20)
	_, _, err = Save(ctx, store, "sbx1", ws, Limits{MaxBytes: 1 << 20})
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "1 MiB compressed limit (max_archive_bytes 1048576)") {
		t.Fatalf("error = %v, want a TooLargeError naming the limit", err)
	}
	after, err := store.Stat(ctx, first.Ref())
	if err != nil || after.Bytes != first.Bytes {
		t.Fatalf("archive after failed save = %+v, %v; want the first one (%d bytes)", after, err, first.Bytes)
	}
	assertOnlyArchives(t, store)
	dst := t.TempDir()
	if _, err := Load(ctx, store, first.Ref(), dst, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "notes.txt")); string(b) != "version one" {
		t.Errorf("restored notes.txt = %q", b)
	}
}

func assertOnlyArchives(t *testing.T, store *Local) {
	t.Helper()
	entries, _ := os.ReadDir(store.dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), suffix) {
			t.Errorf("left behind in the archive folder: %s", e.Name())
		}
	}
}

func TestStoreRefusesBadIDsAndReportsMissing(t *testing.T) {
	ctx := context.Background()
	store, _ := NewLocal(t.TempDir())
	if _, err := store.TempFile("../x"); err == nil || !strings.Contains(err.Error(), `id "../x"`) {
		t.Errorf("TempFile(../x) error = %v", err)
	}
	if _, err := store.Stat(ctx, Ref{ID: "nope"}); !errors.Is(err, ErrNotExist) {
		t.Errorf("Stat(missing) = %v, want ErrNotExist", err)
	}
	if _, _, err := store.Open(ctx, Ref{ID: "nope", Gen: NewGen()}); !errors.Is(err, ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
	if err := store.Delete(ctx, Ref{ID: "nope"}); err != nil {
		t.Errorf("Delete(missing) = %v, want nil", err)
	}
}

// Both sides count files, folders and links against the same limit, so a
// tree of many empty entries is refused when archiving, not at a restore.
func TestEntryLimitIsTheSameBothWays(t *testing.T) {
	src := t.TempDir()
	for i := range 5 {
		write(t, filepath.Join(src, fmt.Sprintf("f%d", i)), "", 0o644)
	}
	var buf bytes.Buffer
	_, err := Create(context.Background(), src, &buf, Limits{MaxEntries: 4})
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "max_entries") {
		t.Fatalf("create: %v, want a RefusedError naming max_entries", err)
	}
	buf.Reset()
	if _, err := Create(context.Background(), src, &buf, Limits{MaxEntries: 5}); err != nil {
		t.Fatal(err)
	}
	archived := buf.Bytes()
	if _, err := Restore(context.Background(), bytes.NewReader(archived), t.TempDir(), RestoreOptions{MaxEntries: 5}); err != nil {
		t.Errorf("restore at the limit: %v", err)
	}
	_, err = Restore(context.Background(), bytes.NewReader(archived), t.TempDir(), RestoreOptions{MaxEntries: 4})
	if err == nil || !strings.Contains(err.Error(), "past the 4 files, folders and links") {
		t.Errorf("restore past the limit: %v", err)
	}
}
