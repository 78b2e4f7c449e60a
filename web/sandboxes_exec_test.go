package web_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox/local"
)

// internetConfig grants the sandbox the Internet (through slirp4netns).
var internetConfig = strings.Replace(sandboxConfig, `"type": "none"`, `"type": "unrestricted"`, 1)

func TestSandboxInternetModeCannotReachTheHost(t *testing.T) {
	w := newSandboxWorld(t, internetConfig, local.Config{})
	s := w.session()
	var hostIP string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			hostIP = ip.IP.String()
			break
		}
	}
	if hostIP == "" {
		t.Skip("this host has no non-loopback IPv4 address to test with")
	}
	ln, err := net.Listen("tcp", hostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	host := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		io.WriteString(rw, "host secret")
	})}}
	host.Start()
	defer host.Close()
	out := w.exec(s, "curl -sS -m 3 "+host.URL+"/")
	if strings.Contains(out.Stdout, "host secret") {
		t.Fatalf("an Internet sandbox reached the host's own address %s: %+v", host.URL, out)
	}
	if !strings.Contains(out.Stderr, "curl: (7)") {
		t.Errorf("curl to the host's address: %+v; want it refused at once (curl error 7)", out)
	}
	// Cloud metadata and private networks are refused by route; the way
	// out, slirp's default route, stays.
	if out := w.exec(s, "ip route get 169.254.169.254; ip route get 10.1.2.3; ip route get 10.0.2.3 >/dev/null && echo dns ok"); out.Stdout != "dns ok\n" ||
		strings.Count(out.Stderr, "Permission denied") != 2 {
		t.Errorf("routes inside: %+v; want metadata and 10/8 prohibited, slirp's DNS routed", out)
	}
	if routes := w.exec(s, "awk '$2 == \"00000000\" && $8 == \"00000000\" {print $1}' /proc/net/route").Stdout; routes != "tap0\n" {
		t.Fatalf("default route: %q, want via tap0", routes)
	}
}

func TestSandboxExecBadInputNamesFieldAndLimit(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	// Over the command limit: refused before any machine starts.
	var p problem
	body := map[string]any{"tool": execTool, "input": map[string]any{"command": strings.Repeat("x", 8193)}}
	if st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", body, &p); st != 422 ||
		!strings.Contains(p.Detail, "command") || !strings.Contains(p.Detail, "8192") {
		t.Fatalf("an 8,193-character command answered %d %+v; want 422 naming command and 8192", st, p)
	}
	// Limits the schema cannot express are refused the same way, before a
	// call is recorded: stdin's 1 MiB counts bytes, not characters.
	cases := []struct {
		input       map[string]any
		field, want string
	}{
		{map[string]any{"command": "true", "cwd": "relative/dir"}, "input.cwd", "\"relative/dir\" must be an absolute path"},
		{map[string]any{"command": "echo \x00"}, "input.command", "NUL"},
		{map[string]any{"command": "wc -c", "stdin": strings.Repeat("é", 900_000)}, "input.stdin", "is 1800000 bytes, the limit is 1048576 (1 MiB)"},
	}
	for _, tc := range cases {
		var p problem
		st := w.api(s.Token, "POST", "/sessions/"+s.ID+"/tool_calls", map[string]any{"tool": execTool, "input": tc.input}, &p)
		if st != 422 || p.Field != tc.field || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("input %.60v answered %d %+v; want 422 on %s saying %q", tc.input, st, p, tc.field, tc.want)
		}
	}
	var calls []struct{ ID string }
	if w.api(s.Token, "GET", "/sessions/"+s.ID+"/tool_calls", nil, &calls); len(calls) != 0 {
		t.Errorf("refused inputs were recorded as calls: %+v", calls)
	}
	var list []runtime.SandboxView
	if w.api(w.owner, "GET", "/sandboxes?session="+s.ID, nil, &list); len(list) != 0 {
		t.Errorf("refused inputs started a sandbox: %+v", list)
	}
}

func TestSandboxWithoutBubblewrapSaysHowToInstall(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{Bwrap: "/nonexistent/bwrap"})
	s := w.session()
	st, c := w.call(s.Token, s.ID, execTool, map[string]any{"command": "true"}, 30)
	if st != 200 || c.Status != "failed" || !strings.Contains(c.Error, "apt-get install -y bubblewrap") {
		t.Fatalf("exec without bwrap answered %d %s %q; want a failure saying how to install it", st, c.Status, c.Error)
	}
}

func TestSandboxExecOutputFitsTheCallLog(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	st, c := w.call(s.Token, s.ID, execTool, map[string]any{"command": "head -c 70000 /dev/zero | tr '\\0' a; " +
		"head -c 70000 /dev/zero | tr '\\0' b >&2; exit 3"}, 30)
	var out struct {
		ExitCode        int `json:"exit_code"`
		Stdout, Stderr  string
		StdoutBytes     int64 `json:"stdout_bytes"`
		StdoutTruncated bool  `json:"stdout_truncated"`
	}
	if st != 200 || c.Status != "succeeded" || json.Unmarshal(c.Output, &out) != nil {
		t.Fatalf("a long output answered %d %s %.200s", st, c.Status, c.Output)
	}
	if out.ExitCode != 3 || out.StdoutBytes != 70000 || !out.StdoutTruncated || !strings.HasPrefix(out.Stdout, "aaa") ||
		!strings.HasSuffix(out.Stdout, "aaa") || !strings.Contains(out.Stdout, "bytes omitted") || !strings.HasPrefix(out.Stderr, "bbb") {
		t.Fatalf("a long output lost its shape: exit %d, %d bytes, truncated %v, stdout %.40q…, stderr %.40q…",
			out.ExitCode, out.StdoutBytes, out.StdoutTruncated, out.Stdout, out.Stderr)
	}
}
