package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A session sandbox binds the volume read-write and may swap a file for a
// fifo between the store's Lstat and its open: reading the file (Volume.get,
// the sync after a call, which holds the session's volume lock) must answer,
// never wait for a writer forever.
func TestOpenNeverWaitsOnAFifoSwappedIn(t *testing.T) {
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const session = "s1"
	if _, err := l.Put(context.Background(), session, "f.txt", strings.NewReader("x"), 10); err != nil {
		t.Fatal(err)
	}
	dir, _ := l.LocalDir(session)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the sandbox's process
		defer close(done)
		file, fifo, tmp := filepath.Join(dir, "f.txt"), filepath.Join(dir, ".fifo"), filepath.Join(dir, ".file")
		for !stop.Load() {
			syscall.Mkfifo(fifo, 0o644)
			os.Rename(fifo, file)
			os.WriteFile(tmp, []byte("x"), 0o644)
			os.Rename(tmp, file)
		}
	}()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			if f, _, err := l.Open(context.Background(), session, "f.txt"); err == nil {
				f.Close()
			}
			l.Hash(context.Background(), session, "f.txt")
		}
	}()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		stop.Store(true)
		// Let the stuck open go: a writer ends its wait.
		if w, err := os.OpenFile(filepath.Join(dir, "f.txt"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("reading a volume file waited on a fifo swapped in after the check")
	}
	stop.Store(true)
	<-done
}
