package main

import (
	"flag"
	"strings"
	"testing"
)

// --min-free-disk (SUBAKO_MIN_FREE_DISK) is the data disk's floor for
// sandbox starts, archives and uploads: 1 GiB unless set.
func TestMinFreeDiskFlag(t *testing.T) {
	tests := []struct {
		args []string
		env  string
		want int64
	}{
		{nil, "", 1 << 30},
		{[]string{"--min-free-disk", "5GiB"}, "", 5 << 30},
		{nil, "200MiB", 200 << 20},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " ")+tc.env, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("SUBAKO_MIN_FREE_DISK", tc.env)
			}
			var c Config
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(new(strings.Builder))
			bindServe(fs, &c)
			if err := parseFlags(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			if int64(c.MinFreeDisk) != tc.want {
				t.Errorf("min free disk = %d, want %d", c.MinFreeDisk, tc.want)
			}
		})
	}
}
