package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

type jobOutput struct {
	Job       string `json:"job"`
	JobStatus string `json:"job_status"`
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
}

// jobCall runs one exec tool call and decodes its job answer.
func (w *world) jobCall(s session, input map[string]any) (call, jobOutput) {
	w.t.Helper()
	st, c := w.call(s.Token, s.ID, execTool, input, 60)
	if st != 200 {
		w.t.Fatalf("exec %v: %d %+v", input, st, c)
	}
	var out jobOutput
	if c.Status == "succeeded" {
		if err := json.Unmarshal(c.Output, &out); err != nil {
			w.t.Fatalf("exec output %s: %v", c.Output, err)
		}
	}
	return c, out
}

// A server started with background: true by one exec is previewed through
// the API after that exec has returned; a later exec reads the job's
// output (the server's access log); the job does not keep the sandbox
// awake, and after a suspension and restore it is gone.
func TestSandboxBackgroundJobServesAPreview(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "mkdir -p site && echo '<h1>made inside</h1>' > site/index.html")
	c, job := w.jobCall(s, map[string]any{"command": "cd site && exec python3 -m http.server 8000", "background": true})
	if c.Status != "succeeded" || job.Job == "" || job.JobStatus != "running" {
		t.Fatalf("the background exec: %+v %+v; want a running job", c, job)
	}
	sbx := w.sandboxOf(s).ID

	// Sandbox.ports lists it once it listens, with no exec running.
	listed := false
	for range 100 {
		var ports []sandbox.ListenPort
		if st := w.api(w.owner, "GET", "/sandboxes/"+sbx+"/ports", nil, &ports); st != 200 {
			t.Fatalf("Sandbox.ports answered %d", st)
		}
		for _, p := range ports {
			listed = listed || p.Port == 8000
		}
		if listed {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !listed {
		t.Fatal("Sandbox.ports never listed port 8000")
	}
	var pv runtime.PortPreview
	if st := w.api(w.owner, "POST", "/sandboxes/"+sbx+"/ports/8000", nil, &pv); st != 200 || pv.Path == "" {
		t.Fatalf("Sandbox.port: %d %+v", st, pv)
	}
	resp, err := http.Get(w.srv.URL + pv.Path)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "made inside") {
		t.Fatalf("the preview answered %d %q", resp.StatusCode, page)
	}

	// The job's output: http.server logs each request on stderr.
	_, read := w.jobCall(s, map[string]any{"job": job.Job})
	if read.JobStatus != "running" || !strings.Contains(read.Stderr, `"GET / HTTP/1.1" 200`) {
		t.Fatalf("reading the job: %+v; want it running with the request logged", read)
	}

	// The same read through the session's MCP endpoint.
	cs := w.mcpSession(s)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: execTool, Arguments: map[string]any{"job": job.Job}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), `"job_status":"running"`) {
		t.Fatalf("reading the job over MCP: %v %q", err, resultText(res))
	}

	// A running job is not activity: the sandbox suspends after its idle
	// timeout, and the job ends with the machine.
	w.advance(sandbox.DefaultIdleTimeout)
	if sb := w.sandboxOf(s); sb.State != "suspended" {
		t.Fatalf("after 5 idle minutes with a job running: %+v; want suspended", sb)
	}
	if st := w.api(w.owner, "POST", "/sandboxes/"+sbx+"/ports/8000", nil, nil); st != 409 {
		t.Fatalf("a preview of a suspended sandbox answered %d, want 409", st)
	}
	gone, _ := w.jobCall(s, map[string]any{"job": job.Job})
	if gone.Status != "failed" || !strings.Contains(gone.Error, "no background job") || !strings.Contains(gone.Error, "suspends") {
		t.Fatalf("reading the job after a suspension: %+v; want it gone, saying why", gone)
	}
	if out := w.exec(s, "cat site/index.html; (echo > /dev/tcp/127.0.0.1/8000) 2>/dev/null && echo listening || echo closed"); !strings.Contains(out.Stdout, "made inside") || !strings.Contains(out.Stdout, "closed") {
		t.Fatalf("after the restore: %+v; want the workspace kept and nothing on port 8000", out)
	}
	if k, _ := w.jobCall(s, map[string]any{"kill_job": job.Job}); k.Status != "failed" || !strings.Contains(k.Error, "kill_job") {
		t.Fatalf("kill_job of a job gone with a suspension: %+v", k)
	}
}

// A fifth background job is refused naming the limit; the refusal names
// the field.
func TestSandboxFifthBackgroundJobRefused(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	var first string
	for i := range 4 {
		c, job := w.jobCall(s, map[string]any{"command": "sleep 600", "background": true})
		if c.Status != "succeeded" || job.JobStatus != "running" {
			t.Fatalf("job %d: %+v", i, c)
		}
		if first == "" {
			first = job.Job
		}
	}
	c, _ := w.jobCall(s, map[string]any{"command": "sleep 600", "background": true})
	if c.Status != "failed" || !strings.Contains(c.Error, "the limit is 4") || !strings.Contains(c.Error, first) {
		t.Fatalf("the fifth job: %+v; want refused naming the limit of 4", c)
	}
	if k, job := w.jobCall(s, map[string]any{"kill_job": first}); k.Status != "succeeded" || job.JobStatus != "killed" {
		t.Fatalf("kill_job: %+v %+v", k, job)
	}
	if c, job := w.jobCall(s, map[string]any{"command": "sleep 600", "background": true}); c.Status != "succeeded" || job.JobStatus != "running" {
		t.Fatalf("a job after one was killed: %+v", c)
	}
}
