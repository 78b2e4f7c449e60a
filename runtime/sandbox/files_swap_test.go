package sandbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A sandbox swapping a folder for a link out of /workspace, over and over
// while files are read, listed and written, never gets the host's files
// read or listed, nor a file written outside /workspace.
func TestFilesNeverLeaveTheWorkspaceWhileALinkIsSwapped(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	secret := []byte("host secret\n")
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), secret, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "d", "f.txt"), []byte("inside\n"), 0o644)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the sandbox: d is a folder, then a link to the host's folder, then a folder again
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "d.real"))
			os.Symlink(outside, filepath.Join(ws, "d"))
			os.Remove(filepath.Join(ws, "d"))
			os.Rename(filepath.Join(ws, "d.real"), filepath.Join(ws, "d"))
		}
	}()
	for i := 0; i < 2000; i++ {
		data, _, err := readFolderFile(ws, "d/f.txt")
		if bytes.Equal(data, secret) {
			t.Fatalf("read the host's file through a swapped link (try %d)", i)
		}
		var fe *FileError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("read: an error that is not a refusal: %v", err)
		}
		l := Listing{Path: "d"}
		listFolder(t.Context(), ws, "d", &l)
		for _, e := range l.Entries {
			if e.Name == "f.txt" && e.Size == int64(len(secret)) {
				t.Fatalf("listed the host's folder through a swapped link: %+v", l.Entries)
			}
		}
		writeFolderFile(ws, "d/w.txt", strings.NewReader("x"), 1)
		if _, err := os.Stat(filepath.Join(outside, "w.txt")); err == nil {
			t.Fatalf("wrote into the host's folder through a swapped link (try %d)", i)
		}
	}
	close(stop)
	wg.Wait()
}
