package sandbox

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A background job outlives its exec but not its agent: when the host
// closes the connection (the machine stops or suspends), the job ends.
func TestClosingTheConnectionKillsBackgroundJobs(t *testing.T) {
	c, served := connect(t)
	pidFile := t.TempDir() + "/pid"
	res, err := c.Exec(context.Background(), ExecRequest{Command: "read pid rest < /proc/self/stat; echo $pid > " + pidFile + "; exec sleep 100", Cwd: "/", Background: true})
	if err != nil || res.JobStatus != JobRunning {
		t.Fatalf("the background exec: %+v, %v", res, err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("the job had not started within its first second")
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the job (pid %d) ended with its exec: %v", pid, err)
	}
	c.Close()
	if err := <-served; err != nil {
		t.Fatalf("agent ended with %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	t.Errorf("the job (pid %d) is still running after the host went away", pid)
}
