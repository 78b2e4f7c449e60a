package fn

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// A session's sandbox binds the same folder read-write and its processes
// outlive an exec: while a WebAssembly call reads and deletes in /volume,
// such a process swaps a folder for a link to a host folder between the
// engine's link check and its system call. The call must neither read nor
// delete a host file.
func TestVolumeFSFollowsNoSwappedLink(t *testing.T) {
	base := t.TempDir()
	vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "host")
	for _, d := range []string{vol, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"secret": "HOST SECRET", "victim": "host file"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := newVolumeFS(VolumeMount{Dir: vol, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 1000})
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the sandbox's process
		defer close(done)
		x := filepath.Join(vol, "x")
		for i := 0; !stop.Load(); i++ {
			os.RemoveAll(x)
			os.Mkdir(x, 0o755)
			os.WriteFile(filepath.Join(x, "secret"), []byte("inside"), 0o644)
			os.WriteFile(filepath.Join(x, "victim"), []byte("inside"), 0o644)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			os.RemoveAll(x)
			os.Symlink(outside, x)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
		}
	}()
	var leaked string
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && leaked == "" {
		if f, errno := v.OpenFile("x/secret", experimentalsys.O_RDONLY, 0); errno == 0 {
			buf := make([]byte, 64)
			n, _ := f.Read(buf)
			f.Close()
			if string(buf[:n]) == "HOST SECRET" {
				leaked = "read a host file"
			}
		}
		v.Unlink("x/victim")
		if _, err := os.Lstat(filepath.Join(outside, "victim")); err != nil {
			leaked = "deleted a host file"
		}
	}
	stop.Store(true)
	<-done
	if leaked != "" {
		t.Fatalf("a WebAssembly call's /volume %s through a folder swapped for a link", leaked)
	}
	if b, _ := io.ReadAll(must(os.Open(filepath.Join(outside, "secret")))); string(b) != "HOST SECRET" {
		t.Fatalf("host file changed: %q", b)
	}
}

func must(f *os.File, err error) *os.File {
	if err != nil {
		panic(err)
	}
	return f
}
