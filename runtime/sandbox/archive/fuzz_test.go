package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// fuzzLimits are small so a fuzzed sparse file or a few hard links reach
// them; the round trip must hold at any limit.
var fuzzLimits = Limits{MaxBytes: 1 << 20, MaxExpandedBytes: 1 << 20, MaxEntries: 40}

// FuzzArchiveRoundTrip builds a folder from the input and checks that
// archiving it either refuses with a named reason (leaving the folder as it
// was) or gives an archive that restores to the same tree. Seeds are in
// testdata/fuzz/FuzzArchiveRoundTrip; run with
// go test -fuzz=FuzzArchiveRoundTrip ./runtime/sandbox/archive/
func FuzzArchiveRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 3, 'h', 'i', '\n', 2, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		src := t.TempDir()
		buildTree(src, data)
		before := snapshot(t, src)
		var buf bytes.Buffer
		st, err := Create(context.Background(), src, &buf, fuzzLimits)
		if err != nil {
			var refused *RefusedError
			var tooLarge *TooLargeError
			if !errors.As(err, &refused) && !errors.As(err, &tooLarge) {
				t.Fatalf("archiving refused without a named reason: %v", err)
			}
			if after := snapshot(t, src); !maps.Equal(before, after) {
				t.Fatalf("a refused archive changed the folder")
			}
			return
		}
		dst := t.TempDir()
		if _, err := Restore(context.Background(), &buf, dst, RestoreOptions{MaxExpandedBytes: fuzzLimits.MaxExpandedBytes, MaxEntries: fuzzLimits.MaxEntries}); err != nil {
			t.Fatalf("archived, but the restore refuses it: %v", err)
		}
		for _, skipped := range st.Skipped {
			delete(before, skipped)
		}
		if got := snapshot(t, dst); !maps.Equal(before, got) {
			t.Fatalf("restored tree differs:\nwant %v\ngot  %v", before, got)
		}
	})
}

// nameParts are what fuzzed names are made of: plain letters, and what
// restores have refused or mangled (backslashes, bytes that are not UTF-8,
// spaces, leading dots and dashes).
var nameParts = []string{"a", "b", "é", `\`, " ", ".", "-", "\xff", "long-name-part-", "Z"}

// buildTree interprets data as a list of operations, each a kind byte and
// its arguments; whatever it cannot create is ignored. Files are created
// with O_EXCL: opening an existing pipe's name would block.
func buildTree(root string, data []byte) {
	r := &fuzzReader{data: data}
	dirs, files := []string{""}, []string{}
	for i := 0; i < 64 && r.more(); i++ {
		kind := r.byte() % 6
		parent := dirs[int(r.byte())%len(dirs)]
		name := r.name()
		if name == "." || name == ".." {
			continue
		}
		rel := filepath.Join(parent, name)
		p := filepath.Join(root, rel)
		switch kind {
		case 0:
			content := r.bytes(int(r.byte()))
			mode := []os.FileMode{0o644, 0o755, 0o600, 0o400}[r.byte()%4]
			if f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode); err == nil {
				f.Write(content)
				f.Close()
				files = append(files, rel)
			}
		case 1:
			if os.Mkdir(p, 0o755) == nil {
				dirs = append(dirs, rel)
			}
		case 2:
			if len(files) > 0 && os.Link(filepath.Join(root, files[int(r.byte())%len(files)]), p) == nil {
				files = append(files, rel)
			}
		case 3:
			targets := []string{"a", "../a", "../../etc", "/workspace/a", "/usr/bin/env", "/etc/passwd", ".", ""}
			target := targets[int(r.byte())%len(targets)]
			if len(files) > 0 && target == "" {
				target = files[int(r.byte())%len(files)]
			}
			os.Symlink(target, p)
		case 4:
			if f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				f.Truncate(int64(r.byte()) << 13) // up to 2 MiB, mostly holes
				f.Close()
				files = append(files, rel)
			}
		case 5:
			syscall.Mkfifo(p, 0o644)
		}
	}
}

type fuzzReader struct {
	data []byte
	pos  int
}

func (r *fuzzReader) more() bool { return r.pos < len(r.data) }

func (r *fuzzReader) byte() byte {
	if r.pos >= len(r.data) {
		return 0
	}
	r.pos++
	return r.data[r.pos-1]
}

func (r *fuzzReader) bytes(n int) []byte {
	end := min(r.pos+n, len(r.data))
	b := r.data[r.pos:end]
	r.pos = end
	return b
}

func (r *fuzzReader) name() string {
	n := 1 + int(r.byte())%4
	var s string
	for range n {
		s += nameParts[int(r.byte())%len(nameParts)]
	}
	return s
}

// snapshot describes every entry below root: its type, file mode and
// content hash, symlink target, and for a file with several names the first
// of them, so hard links that came back as copies differ.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	groups := map[uint64][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			out[rel] = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "symlink " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("file %v %s", info.Mode().Perm(), hex.EncodeToString(sum[:8]))
			ino := info.Sys().(*syscall.Stat_t).Ino
			groups[ino] = append(groups[ino], rel)
		default:
			out[rel] = "other " + info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range groups {
		slices.Sort(names)
		for _, n := range names {
			out[n] += " linked-with " + names[0]
		}
	}
	return out
}
