package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// --reveal-for and --reveal-max (SUBAKO_REVEAL_FOR, SUBAKO_REVEAL_MAX) bound
// the secrets a console form leaves for the page it redirects to; a bad
// value stops the server naming the flag.
func TestRevealFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantFor time.Duration
		wantMax int
		err     string
	}{
		{"defaults", nil, nil, 5 * time.Minute, 4096, ""},
		{"flags", []string{"--reveal-for", "1m", "--reveal-max", "10"}, nil, time.Minute, 10, ""},
		{"environment", nil, map[string]string{"SUBAKO_REVEAL_FOR": "30s", "SUBAKO_REVEAL_MAX": "7"}, 30 * time.Second, 7, ""},
		{"no time", []string{"--reveal-for", "0s"}, nil, 0, 0, "--reveal-for must be positive"},
		{"none kept", []string{"--reveal-max", "0"}, nil, 0, 0, "--reveal-max must be between 1 and 1000000, not 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
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
			if err != nil {
				t.Fatal(err)
			}
			if c.RevealFor != tc.wantFor || c.RevealMax != tc.wantMax {
				t.Errorf("reveal for %s, max %d; want %s, %d", c.RevealFor, c.RevealMax, tc.wantFor, tc.wantMax)
			}
		})
	}
}
