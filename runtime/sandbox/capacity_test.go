package sandbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/sandbox"
)

// Over --max-sandboxes, an exec that would start one more sandbox is refused
// with how long to wait; execs in running sandboxes go on, and a sandbox
// suspended for idleness makes room.
func TestMaxRunningRefusesOneMoreStart(t *testing.T) {
	e := newEnv(t, func(c *sandbox.Config) { c.MaxRunning = 1 })
	e.exec("echo first > f")
	other := sandbox.Key{SessionID: "ses2", Grant: "workbench", Release: "2026", Network: sandbox.NetworkNone}
	e.clock.Advance(time.Minute)
	_, err := e.mgr.Exec(context.Background(), other, sandbox.ExecRequest{Command: "true"})
	var full *sandbox.CapacityError
	if !errors.As(err, &full) || full.Max != 1 || full.Running != 1 {
		t.Fatalf("error = %v, want a CapacityError for 1 of 1 running", err)
	}
	// The running sandbox is idle since a minute ago: it is suspended 4 min
	// from now, at the next tick.
	if full.RetryAfter <= 4*time.Minute || full.RetryAfter > 4*time.Minute+10*time.Second {
		t.Errorf("retry after %v, want about 4 minutes", full.RetryAfter)
	}
	if e.driver.starts() != 1 {
		t.Errorf("%d machines started, want the refused one never started", e.driver.starts())
	}
	if res := e.exec("cat f"); res.Stdout != "first\n" {
		t.Errorf("the running sandbox: %+v", res)
	}
	e.tick(sandbox.DefaultIdleTimeout)
	e.wantState(sandbox.StateSuspended)
	res, err := e.mgr.Exec(context.Background(), other, sandbox.ExecRequest{Command: "echo second"})
	if err != nil || res.Stdout != "second\n" {
		t.Fatalf("after the first was suspended: %+v, %v", res, err)
	}
}

// Under --min-free-disk on the data folder's disk, no sandbox starts: a
// start or restore writes a workspace.
func TestLowDiskRefusesStarts(t *testing.T) {
	full := newEnv(t, func(c *sandbox.Config) { c.MinFreeDisk = 1 << 62 })
	_, err := full.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "true"})
	var low *sandbox.DiskFullError
	if !errors.As(err, &low) || low.Min != 1<<62 || !strings.Contains(err.Error(), "start a sandbox") {
		t.Fatalf("error = %v, want a DiskFullError naming the floor", err)
	}
	if full.driver.starts() != 0 {
		t.Errorf("%d machines started on a nearly full disk", full.driver.starts())
	}
}
