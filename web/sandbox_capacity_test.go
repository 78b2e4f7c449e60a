package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// Over --max-sandboxes, a call that would start one more sandbox is refused
// through the API with 429, code capacity and Retry-After, and the call is
// recorded as refused (as a call a policy denies); the running sandbox
// still answers.
func TestSandboxStartPastCapacityIs429AndRecorded(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	// The same sandboxes again, with room for one.
	if err := w.rt.StopSandboxes(t.Context()); err != nil {
		t.Fatal(err)
	}
	driver, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	archives, err := archive.NewLocal(filepath.Join(w.base, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	err = w.rt.StartSandboxes(t.Context(), runtime.SandboxOptions{Driver: driver, Archives: archives, MaxRunning: 1,
		Dir: filepath.Join(w.base, "machines"), SkillsDir: filepath.Join(w.base, "skills")})
	if err != nil {
		t.Fatal(err)
	}
	first, second := w.session(), w.session()
	w.exec(first, "echo one > f")

	body := `{"tool": "` + execTool + `", "input": {"command": "true"}, "wait_seconds": 30}`
	req, _ := http.NewRequest("POST", w.srv.URL+"/api/v1/sessions/"+second.ID+"/tool_calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+second.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var p struct{ Code, Detail string }
	_ = json.Unmarshal(raw, &p)
	if resp.StatusCode != 429 || p.Code != "capacity" || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(p.Detail, "1 of 1 sandboxes are running") || !strings.Contains(p.Detail, "--max-sandboxes") {
		t.Fatalf("exec past capacity: %d Retry-After=%q %s; want 429, Retry-After, code capacity naming the limit",
			resp.StatusCode, resp.Header.Get("Retry-After"), raw)
	}

	var calls []struct{ Status, Reason string }
	if st := w.api(w.owner, "GET", "/sessions/"+second.ID+"/tool_calls", nil, &calls); st != 200 || len(calls) != 1 ||
		calls[0].Status != "refused" || !strings.Contains(calls[0].Reason, "over capacity") {
		t.Fatalf("the refused call's record: %d %+v", st, calls)
	}
	if out := w.exec(first, "cat f"); out.Stdout != "one\n" {
		t.Errorf("the running sandbox: %+v", out)
	}
}

// Through the API, writing past --sandbox-disk fails inside the sandbox with
// ENOSPC; the exec answers, and the sandbox goes on.
func TestSandboxWritesPastItsDiskFailInside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("workspace disks need a root server")
	}
	w := newSandboxWorld(t, sandboxConfig, local.Config{DiskBytes: 64 << 20})
	s := w.session()
	out := w.exec(s, "head -c 100M /dev/zero > big; echo exit=$?; rm big; echo kept > notes.txt; cat notes.txt")
	if !strings.Contains(out.Stderr, "No space left on device") || !strings.Contains(out.Stdout, "exit=1\nkept\n") {
		t.Fatalf("writing 100 MiB on a 64 MiB workspace: %+v; want No space left on device inside, then the sandbox going on", out)
	}
}
