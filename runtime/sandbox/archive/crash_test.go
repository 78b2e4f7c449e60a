package archive

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child process that only archives, so the test can kill it mid-write.
func TestMain(m *testing.M) {
	if ws := os.Getenv("ARCHIVE_TEST_SAVE_WS"); ws != "" {
		store, err := NewLocal(os.Getenv("ARCHIVE_TEST_SAVE_STORE"))
		if err == nil {
			_, _, err = Save(context.Background(), store, "sbx1", ws, Limits{MaxBytes: 1 << 30})
		}
		if err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestKilledArchivingLosesNothing(t *testing.T) {
	ctx := context.Background()
	storeDir := t.TempDir()
	store, _ := NewLocal(storeDir)
	ws := t.TempDir()
	write(t, filepath.Join(ws, "notes.txt"), "the good version", 0o644)
	good, _, err := Save(ctx, store, "sbx1", ws, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	goodBytes, _ := os.ReadFile(filepath.Join(storeDir, FileName(good.Ref())))
	for i := range 6 {
		randomFile(t, filepath.Join(ws, "noise"+string(rune('a'+i))), 16<<20)
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "ARCHIVE_TEST_SAVE_WS="+ws, "ARCHIVE_TEST_SAVE_STORE="+storeDir)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	temp := waitForTemp(t, storeDir)
	child.Process.Kill()
	child.Wait()

	if now, _ := os.ReadFile(filepath.Join(storeDir, FileName(good.Ref()))); !bytes.Equal(now, goodBytes) {
		t.Fatal("the archive changed although archiving was killed before it finished")
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("expected the killed run's temp file to be left behind: %v", err)
	}
	reopened, err := NewLocal(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	assertOnlyArchives(t, reopened)
	if info, err := reopened.Stat(ctx, good.Ref()); err != nil || info.Bytes != good.Bytes {
		t.Fatalf("after restart: %+v, %v; want the good archive", info, err)
	}
	dst := t.TempDir()
	if _, err := Load(ctx, reopened, good.Ref(), dst, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "notes.txt")); string(b) != "the good version" {
		t.Errorf("notes.txt = %q", b)
	}
}

// waitForTemp returns the child's temporary archive once it holds data.
func waitForTemp(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && strings.Contains(e.Name(), tmpMarker) && fi.Size() > 1<<20 {
				return filepath.Join(dir, e.Name())
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the archiving child never wrote a temp file")
	return ""
}
