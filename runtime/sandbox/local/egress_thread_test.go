package local

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// openDNSPort enters a sandbox's network namespace on a thread of its own.
// That thread must not end: a process started with Pdeathsig (bwrap's
// --die-with-parent, slirp4netns) dies when the thread that started it
// ends, so an allowlist sandbox's start could kill another sandbox, or
// itself before its agent said hello (seen once in CI). Each round starts a
// process as the driver starts bwrap, hands that thread back to the
// runtime, opens port 53 in a namespace, and checks the process lives.
func TestOpenDNSPortEndsNoThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("entering a network namespace needs root")
	}
	holder := exec.Command("unshare", "--net", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Skipf("unshare --net: %v", err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	// unshare execs sleep once the namespace is made.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if l, err := os.Readlink("/proc/" + strconv.Itoa(holder.Process.Pid) + "/exe"); err == nil && l != "/usr/bin/unshare" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare did not start sleep")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for round := range 100 {
		started := make(chan *exec.Cmd)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c := exec.Command("sleep", "60")
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				t.Error(err)
				c = nil
			}
			started <- c
		}()
		c := <-started
		if c == nil {
			return
		}
		if err := openDNSPort(holder.Process.Pid); err != nil {
			c.Process.Kill()
			c.Wait()
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // a signal from a thread's end arrives at once
		alive := c.Process.Signal(syscall.Signal(0)) == nil
		var ws syscall.WaitStatus
		if pid, _ := syscall.Wait4(c.Process.Pid, &ws, syscall.WNOHANG, nil); pid == c.Process.Pid {
			alive = false
		}
		c.Process.Kill()
		c.Wait()
		if !alive {
			t.Fatalf("round %d: a process started with Pdeathsig died when openDNSPort ran (%v)", round, ws)
		}
	}
}
