package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
	"github.com/subako/subako/web"
)

// BenchmarkSandboxWarmExecOverHTTP (issue 11): a warm exec of `true` through
// ToolCall.create on a served Subako (web.New over a real database, real
// bwrap sandbox, the sandbox already running) against an HTTP handler that
// runs `sh -c true`, reached by the same client, alternating call by call.
// x-handler is Subako's mean time over the handler's; goal ≤ 1.5.
func BenchmarkSandboxWarmExecOverHTTP(b *testing.B) {
	ctx := b.Context()
	sb := newSandboxBench(b, "")
	rt, owner := sb.rt, sb.owner
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	srvURL := sb.url
	s, err := rt.SessionCreate(ctx, owner, runtime.SessionCreateInput{Version: sb.ver})
	must(err)

	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		cmd := exec.Command("/bin/sh", "-c", "true")
		err := cmd.Run()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"exit_code": cmd.ProcessState.ExitCode(), "error": err})
	}))
	b.Cleanup(bare.Close)

	client := &http.Client{}
	body := []byte(`{"tool": "sandbox__workbench__exec", "input": {"command": "true"}, "model": "bench", "wait_seconds": 30}`)
	subako := func() {
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
	handlerCall := func() {
		resp, err := client.Post(bare.URL, "application/json", bytes.NewReader(body))
		must(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("handler: %d", resp.StatusCode)
		}
	}
	subako() // the cold start: the sandbox starts here
	handlerCall()
	var ts, th time.Duration
	n := 0
	// Each call starts after a pause (not timed), as a model's calls come:
	// the sandbox's agent prepares the next exec's init after answering,
	// and that work must not land on the handler's time.
	const settle = 50 * time.Millisecond
	for b.Loop() {
		time.Sleep(settle)
		t0 := time.Now()
		subako()
		ts += time.Since(t0)
		time.Sleep(settle)
		t1 := time.Now()
		handlerCall()
		th += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(n)/1000, "ms-subako")
	b.ReportMetric(float64(th.Microseconds())/float64(n)/1000, "ms-handler")
	b.ReportMetric(float64(ts)/float64(th), "x-handler")
}

// sandboxBench is a served Subako (web.New over a real database) with an
// owner, a published version granting a No-internet sandbox on release
// 2026, and real bwrap sandboxes with subako serve's limits: what the
// sandbox benchmarks over HTTP share. agentPath "" is the driver's default.
type sandboxBench struct {
	rt    *runtime.Runtime
	owner runtime.Principal
	ver   string
	url   string
	base  string
}

func newSandboxBench(b *testing.B, agentPath string) sandboxBench {
	ctx := b.Context()
	rt := runtime.New(modelstest.Open(b), runtime.Options{Log: quiet})
	b.Cleanup(rt.Close)
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	_, _, err := rt.UserCreate(ctx, runtime.System, "owner@example.com", "owner", password)
	must(err)
	owner, err := rt.PrincipalForEmail(ctx, "owner@example.com")
	must(err)
	name := "bench"
	a, err := rt.AgentCreate(ctx, owner, runtime.AgentInput{Name: &name})
	must(err)
	cfg := json.RawMessage(`{"sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
	  "network": {"type": "none"}, "default_policy": "allow"}]}`)
	ver, err := rt.VersionCreate(ctx, owner, runtime.VersionCreateInput{Agent: a.ID, Config: cfg})
	must(err)
	_, err = rt.VersionPublish(ctx, owner, ver.ID)
	must(err)

	base := b.TempDir()
	for d := base; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	driver, err := local.New(local.Config{AgentPath: agentPath})
	must(err)
	archives, err := archive.NewLocal(filepath.Join(base, "archives"))
	must(err)
	must(rt.StartSandboxes(ctx, runtime.SandboxOptions{Driver: driver, Archives: archives,
		Dir: filepath.Join(base, "machines"), SkillsDir: filepath.Join(base, "skills"),
		Limits: sandbox.Limits{MemoryBytes: 2 << 30, Pids: 1024, CPUPercent: 100}})) // as subako serve
	b.Cleanup(func() { rt.StopSandboxes(ctx) })
	// The lifecycle's tick, as subako serve runs it: on PostgreSQL it
	// renews this replica's sandbox leases.
	tickCtx, stopTicks := context.WithCancel(context.WithoutCancel(ctx))
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-tickCtx.Done():
				return
			case <-time.After(5 * time.Second):
				rt.SandboxTick(tickCtx)
			}
		}
	}()
	b.Cleanup(func() { stopTicks(); <-ticked })

	key := []byte("0123456789abcdef0123456789abcdef")
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	handler = web.New(rt, web.Config{BaseURL: srv.URL, CookieHashKey: key, CookieBlockKey: key, Log: quiet})
	b.Cleanup(srv.Close)
	return sandboxBench{rt: rt, owner: owner, ver: ver.ID, url: srv.URL, base: base}
}
