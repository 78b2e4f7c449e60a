package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/runtime/egress/proxy"
)

// TestExitRefusalsBoundedInLogAndMemory: an agent looping on refused
// requests, each to a new 60 KB host name, writes at most 20 server log
// lines a minute (then one saying how many it left out), and the hosts
// kept for the Sandboxes tab are cut to a name's 253 characters.
func TestExitRefusalsBoundedInLogAndMemory(t *testing.T) {
	var lines []string
	logged := 0
	l := &exitLog{log: func(msg string, args ...any) {
		line := fmt.Sprint(append([]any{msg}, args...)...)
		lines = append(lines, line)
		logged += len(line)
	}}
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for i := 0; i < 10000; i++ {
		host := fmt.Sprintf("h%d.%s", i, strings.Repeat("a", 60<<10))
		l.add("sbx_loop", proxy.Event{Kind: proxy.EventRefused, Host: host, Detail: "not on this sandbox's allowlist " + host}, now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(lines) > maxExitLogLines || logged > maxExitLogLines*2048 {
		t.Fatalf("10,000 refusals in 10 s wrote %d log lines, %d bytes", len(lines), logged)
	}
	kept := 0
	for _, e := range l.events("sbx_loop") {
		kept += len(e.Host) + len(e.Detail)
	}
	if kept > maxExitEvents*(maxExitHost+maxExitDetail+16) {
		t.Fatalf("the sandbox's exit events hold %d bytes", kept)
	}
	// The next minute: the count left out is said, and logging goes on.
	l.add("sbx_loop", proxy.Event{Kind: proxy.EventRefused, Host: "late.example", Detail: "x"}, now.Add(2*time.Minute))
	if n := len(lines); n != maxExitLogLines+2 || !strings.Contains(lines[n-2], "left_out") || !strings.Contains(lines[n-1], "late.example") {
		t.Fatalf("after a minute: %d lines, last two %q", n, lines[max(0, n-2):])
	}
}
