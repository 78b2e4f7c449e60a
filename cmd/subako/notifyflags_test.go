package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// --smtp-url and the --notify-* limits are read from flags or their
// variables and checked at start; a bad mail URL stops the server with a
// message that names the flag and never the password.
func TestNotifyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		env     map[string]string
		server  string
		attempt int
		err     string
	}{
		{args: nil, attempt: 8},
		{args: []string{"--notify-attempts", "3"}, attempt: 3},
		{env: map[string]string{"SUBAKO_SMTP_URL": "smtp://u:hunter2@mail.example.com:2525", "SUBAKO_SMTP_FROM": "s@example.com"},
			server: "smtp://mail.example.com:2525", attempt: 8},
		{args: []string{"--smtp-url", "smtp://u:hunter2@mail.example.com"}, err: "--smtp-from"},
		{args: []string{"--smtp-url", "imap://u:hunter2@mail.example.com", "--smtp-from", "s@example.com"}, err: "--smtp-url scheme"},
		{args: []string{"--notify-attempts", "0"}, err: "--notify-attempts"},
		{args: []string{"--notify-timeout", "1h"}, err: "--notify-timeout at most 5m"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
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
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error %v, want one naming %q and not the password", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := c.notifyOptions()
			if o.Attempts != tc.attempt || o.Timeout != 10*time.Second || o.BaseURL != "http://127.0.0.1:8080" {
				t.Errorf("notify options %+v", o)
			}
			got := ""
			if o.SMTP != nil {
				got = o.SMTP.Server()
			}
			if got != tc.server {
				t.Errorf("mail server %q, want %q", got, tc.server)
			}
		})
	}
}
