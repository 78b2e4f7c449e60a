package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

const (
	fdChildEnv  = "SUBAKO_TEST_FD_CHILD"
	inheritedFD = 40
)

// A server started with a descriptor it did not open (a writable pipe its
// parent forgot to mark close-on-exec) must not hand it to any process of a
// sandbox. The driver runs in a child of the test, which inherits the pipe
// as fd 40 exactly as a server would.
func TestInheritedDescriptorsStayOutsideTheSandbox(t *testing.T) {
	if os.Getenv(fdChildEnv) == "1" {
		fdChild(t)
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(w.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInheritedDescriptorsStayOutsideTheSandbox$", "-test.v")
	cmd.Env = append(os.Environ(), fdChildEnv+"=1")
	// fd 40 in the child, without close-on-exec: above the few the driver
	// hands bwrap itself, which would cover a lower one.
	cmd.ExtraFiles = append(make([]*os.File, inheritedFD-3), w)
	out, err := cmd.CombinedOutput()
	w.Close()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	listing, ok := strings.CutPrefix(string(out[strings.Index(string(out), "FDS:"):]), "FDS:")
	if !ok || !strings.Contains(listing, "/proc/1/fd/0 pipe:") {
		t.Fatalf("the child did not list the sandbox's descriptors:\n%s", out)
	}
	if pipe := fmt.Sprintf("pipe:[%d]", st.Ino); strings.Contains(listing, pipe) {
		t.Errorf("the server's inherited %s is open inside the sandbox:\n%s", pipe, listing)
	}
}

// fdChild starts a sandbox and prints where every descriptor of every
// process inside points.
func fdChild(t *testing.T) {
	if _, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", inheritedFD)); err != nil {
		t.Fatalf("the child did not inherit fd %d: %v", inheritedFD, err)
	}
	m := start(t, newDriver(t, Config{}), sandbox.Spec{})
	res, err := m.Exec(context.Background(), sandbox.ExecRequest{Command: "cd /workspace && for p in /proc/[0-9]*; do for f in $p/fd/*; do echo \"$f $(readlink $f)\"; done; done", TimeoutSecs: 30})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print("FDS:" + res.Stdout)
}
