package main

import (
	"flag"
	"strings"
	"testing"
)

// --permission-decay (SUBAKO_PERMISSION_DECAY): days a seat's permission may
// go unused before the nightly decay removes it; 0 (the default) is off, and
// a value out of range stops the server naming the flag and the limit.
func TestPermissionDecayFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want int
		err  string
	}{
		{"default off", nil, "", 0, ""},
		{"flag", []string{"--permission-decay", "90"}, "", 90, ""},
		{"environment", nil, "30", 30, ""},
		{"negative", []string{"--permission-decay", "-1"}, "", 0, "--permission-decay must be from 0 (off) to 3650 days, not -1"},
		{"too long", []string{"--permission-decay", "4000"}, "", 0, "--permission-decay must be from 0 (off) to 3650 days, not 4000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("SUBAKO_PERMISSION_DECAY", tc.env)
			}
			var c Config
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(new(strings.Builder))
			bindServe(fs, &c)
			if err := parseFlags(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			err := c.validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("validate: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || c.PermissionDecay != tc.want {
				t.Fatalf("validate: %v, decay %d, want %d", err, c.PermissionDecay, tc.want)
			}
		})
	}
}
