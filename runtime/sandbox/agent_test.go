package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// connect runs an agent in this process over pipes, as a driver would.
func connect(t *testing.T) (*AgentClient, chan error) {
	t.Helper()
	hostR, agentW := io.Pipe()
	agentR, hostW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- ServeAgent(agentR, agentW)
		agentW.Close()
	}()
	c := NewAgentClient(hostR, hostW)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return c, served
}

func TestClosingTheConnectionKillsRunningCommands(t *testing.T) {
	c, served := connect(t)
	pidFile := t.TempDir() + "/pid"
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), ExecRequest{Command: "read pid rest < /proc/self/stat; echo $pid > " + pidFile + "; exec sleep 100", Cwd: "/"})
		done <- err
	}()
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		t.Fatal("the command never started")
	}
	c.Close()
	if err := <-served; err != nil {
		t.Fatalf("agent ended with %v", err)
	}
	if err := <-done; !errors.Is(err, ErrMachineExited) {
		t.Errorf("exec error = %v, want ErrMachineExited", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the command (pid %d) is still running after the host went away", pid)
	}
}

func TestOversizedFrameIsRefused(t *testing.T) {
	r, w := io.Pipe()
	go w.Write([]byte{0xff, 0xff, 0xff, 0xff})
	err := ServeAgent(r, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "over the 16777216 limit") {
		t.Fatalf("error = %v, want the frame limit named", err)
	}
}

func TestHostClampsAnOversizedAnswer(t *testing.T) {
	big := strings.Repeat("x", MaxOutputBytes*3)
	res, err := resultOf(frame{Type: frameResult, Result: &ExecResult{Stdout: big, Stderr: "ok"}})
	if err != nil || len(res.Stdout) != MaxOutputBytes || !res.StdoutTruncated || res.Stderr != "ok" || res.StderrTruncated {
		t.Fatalf("clamped result: %d bytes, truncated %v, stderr %q (%v)", len(res.Stdout), res.StdoutTruncated, res.Stderr, err)
	}
}
