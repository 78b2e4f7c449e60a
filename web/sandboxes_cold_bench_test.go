package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/runtime"
)

// BenchmarkSandboxColdExecOverHTTP (issue 11): the first exec of `true` in a
// new session, through ToolCall.create on a served Subako (web.New over a
// real database, a real bwrap sandbox started by that call: the workspace
// folder, the sandbox's records, the machine's start, the exec), against an
// HTTP handler that runs a bare `bwrap … sh -c true` (the same baseline as
// runtime/sandbox/local's BenchmarkHotColdStartVsBare), reached by the same
// client, alternating. Each session is made before its call, not timed;
// the sandboxes stay running until the benchmark ends (a user waits for
// the first answer, not for the sandbox's later stop). x-bare is Subako's
// mean time over the handler's; the goal (cold start ≤ 2× bare bwrap)
// applies to it.
func BenchmarkSandboxColdExecOverHTTP(b *testing.B) {
	ctx := b.Context()
	sb := newSandboxBench(b, coldBenchAgent(b))
	rt, owner, base := sb.rt, sb.owner, sb.base
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	srvURL := sb.url
	// The baseline: bare bwrap as the sandboxes' host user (nobody when
	// root, as the driver runs them), on a workspace of its own.
	ws := filepath.Join(base, "bare-workspace")
	must(os.Mkdir(ws, 0o755))
	var cred *syscall.SysProcAttr
	if os.Geteuid() == 0 {
		must(os.Chown(ws, 65534, 65534))
		cred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		cmd := exec.Command("bwrap", "--unshare-all", "--die-with-parent", "--new-session",
			"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
			"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
			"--bind", ws, "/workspace", "--chdir", "/workspace", "sh", "-c", "true")
		cmd.SysProcAttr = cred
		err := cmd.Run()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"exit_code": cmd.ProcessState.ExitCode(), "error": err})
	}))
	b.Cleanup(bare.Close)

	client := &http.Client{}
	body := []byte(`{"tool": "sandbox__workbench__exec", "input": {"command": "true"}, "model": "bench", "wait_seconds": 30}`)
	firstExec := func(s runtime.SessionView) {
		req, _ := http.NewRequest("POST", srvURL+"/api/v1/sessions/"+s.ID+"/tool_calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		must(err)
		var c call
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || c.Status != "succeeded" {
			b.Fatalf("exec: %d %+v %v", resp.StatusCode, c, err)
		}
	}
	bareCall := func() {
		resp, err := client.Post(bare.URL, "application/json", bytes.NewReader(body))
		must(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("bare bwrap: %d", resp.StatusCode)
		}
	}
	newSession := func() runtime.SessionView {
		s, err := rt.SessionCreate(ctx, owner, runtime.SessionCreateInput{Version: sb.ver})
		must(err)
		return s
	}
	firstExec(newSession()) // the release's root and the client's connections, once
	bareCall()
	var ts, tb time.Duration
	n := 0
	for b.Loop() {
		s := newSession()
		t0 := time.Now()
		firstExec(s)
		t1 := time.Now()
		bareCall()
		ts += t1.Sub(t0)
		tb += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(n)/1000, "ms-subako")
	b.ReportMetric(float64(tb.Microseconds())/float64(n)/1000, "ms-bare")
	b.ReportMetric(float64(ts)/float64(tb), "x-bare")
}

// coldBenchAgent is the agent the served Subako's sandboxes run:
// cmd/subako-agent built as `make build` ships it (CGO_ENABLED=0), or
// SUBAKO_BENCH_AGENT. Without it the driver would fall back on this test
// binary, whose packages' init every cold start would pay.
func coldBenchAgent(b *testing.B) string {
	if p := os.Getenv("SUBAKO_BENCH_AGENT"); p != "" {
		return p
	}
	out := filepath.Join(b.TempDir(), "subako-agent")
	build := exec.Command("go", "build", "-o", out, "github.com/subako/subako/cmd/subako-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the agent: %v: %s", err, msg)
	}
	return out
}
