package main

import (
	"flag"
	"strings"
	"testing"
)

func TestSandboxFlags(t *testing.T) {
	tests := []struct {
		args     []string
		wantDisk int64
		wantErr  string
	}{
		{nil, 2 << 30, ""},
		{[]string{"--sandbox-disk", "512MiB"}, 512 << 20, ""},
		{[]string{"--sandbox-disk", "1.5G"}, 3 << 29, ""},
		{[]string{"--sandbox-disk", "1048576000"}, 1048576000, ""},
		{[]string{"--sandbox-disk", "lots"}, 0, `"lots" is not a size`},
		{[]string{"--sandbox-disk", "1MiB"}, 0, "--sandbox-disk must be at least 64MiB, not 1MiB"},
		{[]string{"--max-sandboxes", "0"}, 0, "--max-sandboxes must be 1 or more"},
		{[]string{"--sandbox-tmp", "0"}, 0, "--sandbox-tmp must be at least 1MiB"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var c Config
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(new(strings.Builder))
			bindServe(fs, &c)
			err := parseFlags(fs, tc.args)
			if err == nil {
				err = c.validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || int64(c.SandboxDisk) != tc.wantDisk || c.MaxSandboxes != 20 {
				t.Fatalf("disk %d, max %d, err %v; want disk %d, max 20", c.SandboxDisk, c.MaxSandboxes, err, tc.wantDisk)
			}
		})
	}
}
