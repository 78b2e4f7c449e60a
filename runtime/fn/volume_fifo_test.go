package fn

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// A session sandbox writing the volume may leave a fifo in it (its
// processes outlive the exec whose scan removes them). A WebAssembly call
// opening it must get an error at once: a host open of a fifo waits for a
// writer forever, past the call's deadline.
func TestVolumeFSRefusesAFifo(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := newVolumeFS(VolumeMount{Dir: dir, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10})
	got := make(chan experimentalsys.Errno, 1)
	go func() {
		f, errno := v.OpenFile("pipe", experimentalsys.O_RDONLY, 0)
		if errno == 0 {
			f.Close()
		}
		got <- errno
	}()
	select {
	case errno := <-got:
		if errno == 0 {
			t.Fatal("a fifo in /volume was opened")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("opening a fifo in /volume waited for a writer")
	}
}
