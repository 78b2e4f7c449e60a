package sandbox_test

import (
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
)

// What archives, restores: a workspace a restore would refuse is refused
// when archiving instead, with archive_error saying why, and its folder is
// kept and used by the next exec; hard links come back as links, so they
// count once against the expanded limit.
func TestArchiveRefusesWhatARestoreWould(t *testing.T) {
	small := func(c *sandbox.Config) { c.MaxExpandedBytes = 1 << 20 }
	tests := []struct {
		name, setup, why string
	}{
		{"backslash in a name", `echo x > 'a\b'`, "backslash"},
		{"sparse file past the expanded limit", "truncate -s 2M sparse", "max_expanded_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, small)
			e.exec("echo kept > notes.txt; " + tc.setup)
			e.tick(sandbox.DefaultIdleTimeout)
			rec := e.wantState(sandbox.StateSuspended)
			if !strings.Contains(rec.ArchiveError, tc.why) {
				t.Errorf("archive_error = %q, want it to name %q", rec.ArchiveError, tc.why)
			}
			if res := e.exec("cat notes.txt; ls | wc -l"); res.Stdout != "kept\n2\n" {
				t.Errorf("after the refused archive: %+v, want the kept folder", res)
			}
		})
	}
	t.Run("hard links", func(t *testing.T) {
		e := newEnv(t, small)
		e.exec("head -c 600000 /dev/urandom > big; for i in 1 2 3 4 5; do ln big link$i; done; sha256sum < big > sum")
		e.tick(sandbox.DefaultIdleTimeout)
		if rec := e.wantState(sandbox.StateSuspended); rec.ArchiveError != "" {
			t.Fatalf("archive_error = %q", rec.ArchiveError)
		}
		res := e.exec("stat -c %h big link5; sha256sum < link5 | cmp - sum && echo same")
		if res.Stdout != "6\n6\nsame\n" {
			t.Errorf("after the restore: %+v, want six names of one file", res)
		}
	})
}
