package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// With workspace disks, the lifecycle is unchanged: what was written before
// the disk filled is archived at suspension and back after the restore.
func TestWorkspaceDiskThroughSuspendAndRestore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("workspace disks need a root server")
	}
	e := newEnv(t, func(c *sandbox.Config) {
		d, err := local.New(local.Config{DiskBytes: 64 << 20, WorkspaceRoot: c.Dir})
		if err != nil {
			t.Fatal(err)
		}
		c.Driver = d
	})
	e.exec("echo kept > notes.txt")
	res, err := e.mgr.Exec(context.Background(), key, sandbox.ExecRequest{Command: "head -c 100M /dev/zero > big", TimeoutSecs: 30})
	if err != nil || !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("filling the disk: %+v, %v", res, err)
	}
	e.exec("rm big")
	e.tick(sandbox.DefaultIdleTimeout)
	rec := e.wantState(sandbox.StateSuspended)
	if files := e.archived(rec.ID); files["notes.txt"] != "kept\n" || len(files) != 1 {
		t.Fatalf("archive holds %v, want notes.txt alone", files)
	}
	if res := e.exec("cat notes.txt; ls"); res.Stdout != "kept\nnotes.txt\n" {
		t.Errorf("after the restore: %q", res.Stdout)
	}
}
