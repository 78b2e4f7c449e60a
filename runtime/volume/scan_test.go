package volume

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A scan of a folder a sandbox wrote never reaches outside it: links (to a
// file, to a folder) are removed, not followed, and what they point at is
// neither read, changed, nor given to another owner.
func TestScanDirRemovesLinksAndNeverLeavesTheFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("host only"), 0o600)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "ok.txt"), []byte("fine"), 0o644)
	os.Symlink(secret, filepath.Join(dir, "pw"))
	os.Symlink(outside, filepath.Join(dir, "a", "out"))
	os.Link(filepath.Join(dir, "a", "ok.txt"), filepath.Join(dir, "second"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad\\name"), []byte("x"), 0o644)

	if os.Geteuid() == 0 {
		if err := GiveTo(dir, 4242, 4242, 100, time.Second); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		syscall.Stat(secret, &st)
		if st.Uid == 4242 {
			t.Fatal("GiveTo gave away a file outside the volume through a link")
		}
	}
	s, err := ScanDir(dir, 100, time.Second, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.Removed)
	// a/ok.txt had a second name: the first met goes, the other is then
	// a plain file of one name and stays.
	want := []string{"a/ok.txt", "a/out", "bad\\name", "fifo", "pw"}
	if _, kept := s.Files["second"]; !slices.Equal(s.Removed, want) || len(s.Files) != 1 || !kept || s.Stopped != "" {
		t.Fatalf("removed %q files %v stopped %q; want %q removed", s.Removed, s.Files, s.Stopped, want)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "host only" {
		t.Fatalf("the file outside: %q %v", b, err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the folder outside: %v", err)
	}

	// Bounded: a scan stops after its entries and says so.
	for i := range 10 {
		os.WriteFile(filepath.Join(dir, "f"+string(rune('0'+i))), nil, 0o644)
	}
	if s, _ := ScanDir(dir, 4, time.Second, false, nil); s.Stopped == "" || len(s.Files) > 4 {
		t.Fatalf("a scan bounded to 4 entries: %d files, stopped %q", len(s.Files), s.Stopped)
	}
}
