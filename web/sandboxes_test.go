package web_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/archive"
	"github.com/subako/subako/runtime/sandbox/local"
)

// The test binary is also the agent inside the sandboxes these tests start.
func TestMain(m *testing.M) {
	sandbox.RunAgentIfRequested()
	os.Exit(m.Run())
}

const sandboxConfig = `{
  "skills": [{"name": "helper", "skill": "helper"}],
  "sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
    "network": {"type": "none"}, "default_policy": "allow"}]
}`

const execTool = "sandbox__workbench__exec"

// sandboxDirs returns folders for machines, skills and archives that the
// sandbox uid can pass through (t.TempDir is 0700).
func sandboxDirs(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for d := base; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	return base
}

// startSandboxes runs real bubblewrap sandboxes for e's runtime, on e's
// clock, so a test moves the lifecycle on with Advance and SandboxTick.
func startSandboxes(t *testing.T, rt *runtime.Runtime, base string, cfg local.Config) {
	t.Helper()
	driver, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	archives, err := archive.NewLocal(filepath.Join(base, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	err = rt.StartSandboxes(t.Context(), runtime.SandboxOptions{Driver: driver, Archives: archives,
		Dir: filepath.Join(base, "machines"), SkillsDir: filepath.Join(base, "skills")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.StopSandboxes(context.Background()) }) // t.Context() is cancelled before cleanups run
}

// sandboxWorld is a world whose sandboxes keep their folders under base.
type sandboxWorld struct {
	*world
	base string
}

// newSandboxWorld is an owner, a skill, and a published version granting
// the skill and a sandbox without internet, with sandboxes running.
func newSandboxWorld(t *testing.T, config string, cfg local.Config) sandboxWorld {
	t.Helper()
	e := newEnv(t)
	ownerBrowser := e.owner()
	w := &world{env: e, owner: longToken(ownerBrowser)}
	skill := map[string]any{"name": "helper", "description": "A script", "files": []map[string]any{
		{"path": "bin/hello.sh", "content": "#!/bin/sh\necho hello from the skill\n", "mode": "0755"}}}
	if st := e.api(w.owner, "POST", "/skills", skill, nil); st != 201 {
		t.Fatalf("Skill.create: %d", st)
	}
	agent, draft := e.agentWithDraft(w.owner)
	w.agent = agent
	if st, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", config); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := e.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	w.version = draft.ID
	base := sandboxDirs(t)
	startSandboxes(t, e.rt, base, cfg)
	return sandboxWorld{world: w, base: base}
}

// longToken is an API token that outlives the hours these tests skip.
func longToken(b *client) string {
	b.e.t.Helper()
	_, page := b.submit("/tokens", url.Values{"name": {"long"}, "expires": {"30d"}})
	m := regexp.MustCompile(`sbk_[a-z0-9]+`).FindString(page)
	if m == "" {
		b.e.t.Fatalf("no token on the Tokens page:\n%s", page)
	}
	return m
}

type execOutput struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// exec runs a command through ToolCall.create and wants it to succeed.
func (w *world) exec(s session, command string) execOutput {
	w.t.Helper()
	st, c := w.call(s.Token, s.ID, execTool, map[string]any{"command": command, "timeout_secs": 30}, 60)
	if st != 200 || c.Status != "succeeded" {
		w.t.Fatalf("exec %q: %d %+v", command, st, c)
	}
	var out execOutput
	if err := json.Unmarshal(c.Output, &out); err != nil {
		w.t.Fatalf("exec output %s: %v", c.Output, err)
	}
	return out
}

func TestSandboxExecThroughToolCallAndMCP(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()

	out := w.exec(s, "pwd; echo kept > notes.txt; /skills/helper/bin/hello.sh; id -u")
	if out.ExitCode != 0 || out.Stdout != "/workspace\nhello from the skill\n1000\n" {
		t.Fatalf("exec answered %+v; want /workspace, the skill's script run by its exec bit, uid 1000", out)
	}
	if out := w.exec(s, "cat notes.txt; exit 3"); out.ExitCode != 3 || out.Stdout != "kept\n" {
		t.Fatalf("second exec: %+v; want the file back and exit code 3", out)
	}

	// A service on the host's loopback is out of reach without internet.
	host := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "host secret") }))
	defer host.Close()
	if out := w.exec(s, "curl -sS -m 3 "+host.URL+"/"); out.ExitCode == 0 || strings.Contains(out.Stdout, "host secret") {
		t.Fatalf("the sandbox reached %s on the host: %+v", host.URL, out)
	}

	// The same tool through the session's MCP endpoint.
	cs := w.mcpSession(s)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: execTool, Arguments: map[string]any{"command": "cat notes.txt"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), `"stdout":"kept\n"`) {
		t.Fatalf("tools/call over MCP: %v %+v %q", err, res, resultText(res))
	}
}

// sandboxOf returns the session's one sandbox through Sandbox.list.
func (w *world) sandboxOf(s session) runtime.SandboxView {
	w.t.Helper()
	var list []runtime.SandboxView
	if st := w.api(w.owner, "GET", "/sandboxes?session="+s.ID, nil, &list); st != 200 || len(list) != 1 {
		w.t.Fatalf("Sandbox.list: %d %+v", st, list)
	}
	return list[0]
}

// advance moves the clock and runs the lifecycle's timers once.
func (w *world) advance(d time.Duration) {
	w.t.Helper()
	w.clock.Advance(d)
	if err := w.rt.SandboxTick(w.t.Context()); err != nil {
		w.t.Fatalf("tick: %v", err)
	}
}

// download fetches an archive through the API and unpacks it to path → content.
func (w *world) download(token, id string) (int, http.Header, map[string]string) {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.srv.URL+"/api/v1/sandboxes/"+id+"/archive", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return resp.StatusCode, resp.Header, nil
	}
	return resp.StatusCode, resp.Header, untar(w.t, body)
}

func untar(t *testing.T, gz []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("archive is not gzip: %v", err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("archive is not a tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, "./")] = string(b)
		}
	}
}

func TestSandboxLifecycleArchiveAndPermissions(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "mkdir -p src && echo kept > src/notes.txt && echo scratch > /tmp/outside")
	sb := w.sandboxOf(s)
	if sb.State != "running" || sb.Grant != "workbench" || sb.Network != "none" || sb.Release != "2026" || sb.Archive != nil {
		t.Fatalf("after the first exec: %+v", sb)
	}
	if st, _, _ := w.download(w.owner, sb.ID); st != 404 {
		t.Fatalf("download before any suspension answered %d, want 404", st)
	}

	w.advance(sandbox.DefaultIdleTimeout)
	sb = w.sandboxOf(s)
	if sb.State != "suspended" || sb.Archive == nil || sb.MachineSeconds != 300 {
		t.Fatalf("after 5 idle minutes: %+v; want suspended, archived, 300 s of machine time", sb)
	}
	st, hdr, files := w.download(w.owner, sb.ID)
	if st != 200 || files["src/notes.txt"] != "kept\n" || hdr.Get("Content-Length") != fmt.Sprint(sb.Archive.Bytes) ||
		!strings.Contains(hdr.Get("Content-Disposition"), "workbench-"+sb.ID+".tar.gz") {
		t.Fatalf("download: %d %v files %v", st, hdr, files)
	}
	var p problem
	if st := w.api(w.owner, "DELETE", "/sandboxes/"+sb.ID+"/archive", nil, &p); st != 409 || p.Code != "sandbox_not_retired" {
		t.Fatalf("deleting a suspended sandbox's archive answered %d %+v; want 409", st, p)
	}

	out := w.exec(s, "cat src/notes.txt; cat /tmp/outside")
	if out.Stdout != "kept\n" || !strings.Contains(out.Stderr, "No such file") {
		t.Fatalf("after restore: %+v; want /workspace back and /tmp empty", out)
	}
	w.advance(sandbox.DefaultIdleTimeout)
	w.advance(sandbox.DefaultRetireAfter)
	if sb = w.sandboxOf(s); sb.State != "retired" || sb.Archive == nil || sb.MachineSeconds != 600 {
		t.Fatalf("after 5 h suspended: %+v; want retired with its archive and 600 s", sb)
	}
	checkArchivePermissions(t, w.world, s, sb)
	checkSandboxUsage(t, w.world, sb.ID)
}

// checkArchivePermissions: a viewer may not download, a member may download
// but not delete, an owner deletes a retired sandbox's archive; every
// download, refused or not, is on the audit log.
func checkArchivePermissions(t *testing.T, w *world, s session, sb runtime.SandboxView) {
	t.Helper()
	var p problem
	ownerBrowser := w.browserOf()
	viewerBrowser := w.person(ownerBrowser, "viewer@example.com", "viewer")
	viewer := longToken(viewerBrowser)
	member := longToken(w.person(ownerBrowser, "member@example.com", "member"))
	if st := w.api(viewer, "GET", "/sandboxes/"+sb.ID+"/archive", nil, &p); st != 403 || p.MissingPermission != "Archive.download session:"+s.ID {
		t.Fatalf("a viewer's download answered %d %+v", st, p)
	}
	if _, page := viewerBrowser.get("/sessions/" + s.ID + "/sandboxes"); !strings.Contains(page, "retired") ||
		strings.Contains(page, "archive-download") || strings.Contains(page, "archive-delete") {
		t.Fatalf("a viewer's Sandboxes tab offers archive buttons or lacks the sandbox:\n%s", page)
	}
	if resp, _ := viewerBrowser.get("/sandboxes/" + sb.ID + "/archive"); resp.StatusCode != 403 {
		t.Fatalf("a viewer's console download answered %d", resp.StatusCode)
	}
	p = problem{}
	if st := w.api(member, "DELETE", "/sandboxes/"+sb.ID+"/archive", nil, &p); st != 403 || p.MissingPermission != "Archive.delete session:"+s.ID {
		t.Fatalf("a member's delete answered %d %+v", st, p)
	}
	if st, _, files := w.download(member, sb.ID); st != 200 || files["src/notes.txt"] != "kept\n" {
		t.Fatalf("a member's download: %d %v", st, files)
	}
	if st := w.api(w.owner, "DELETE", "/sandboxes/"+sb.ID+"/archive", nil, nil); st != 204 {
		t.Fatalf("deleting a retired sandbox's archive answered %d", st)
	}
	if st, _, _ := w.download(w.owner, sb.ID); st != 404 || w.sandboxOf(s).Archive != nil {
		t.Fatalf("after deletion the archive still downloads (%d)", st)
	}
	var acts []runtime.ActionView
	w.api(w.owner, "GET", "/actions?verb=Archive.download", nil, &acts)
	verdicts := map[string]int{}
	for _, a := range acts {
		verdicts[a.Verdict]++
	}
	if verdicts["allowed"] < 2 || verdicts["refused"] != 2 {
		t.Errorf("Archive.download actions: %v; want the downloads allowed and the viewer's refused", verdicts)
	}
}

// checkSandboxUsage wants two runs of machine time at the sandbox price and
// archive storage that stops when the archive is deleted.
func checkSandboxUsage(t *testing.T, w *world, id string) {
	t.Helper()
	var machine, stored []models.UsageRecord
	db := w.rt.DB()
	db.Where("subject = ? AND kind = ?", id, runtime.UsageMachineSeconds).Order("started_at").Find(&machine)
	if len(machine) != 2 || machine[0].Quantity != 300 || machine[0].Unit != "second" ||
		fmt.Sprintf("%.4f", machine[0].Credits) != fmt.Sprintf("%.4f", 300*0.02777778) || machine[0].AgentID != w.agent {
		t.Errorf("machine time records: %+v; want two runs of 300 s at 0.02777778 SC/s", machine)
	}
	db.Where("subject = ? AND kind = ?", id, runtime.UsageArchiveBytes).Order("started_at, ended_at").Find(&stored)
	var byteSeconds float64
	for _, u := range stored {
		byteSeconds += u.Quantity * u.EndedAt.Sub(u.StartedAt).Seconds()
	}
	// Kept from the first suspension to the deletion: 5 min + 5 min + 5 h.
	if len(stored) == 0 || byteSeconds < float64(5*3600+600)*stored[0].Quantity*0.5 {
		t.Fatalf("archive storage records %+v add up to %.0f byte-seconds", stored, byteSeconds)
	}
	w.advance(3 * time.Hour)
	var after int64
	db.Model(&models.UsageRecord{}).Where("subject = ? AND kind = ?", id, runtime.UsageArchiveBytes).Count(&after)
	if int(after) != len(stored) {
		t.Errorf("archive storage still metered after its deletion: %d records, was %d", after, len(stored))
	}
}

// Sessions ended in the middle of a burst of calls have their sandboxes
// suspended all the same, at once: the burst's events must not crowd a
// session's end out of what the server listens to while it archives
// another sandbox (no SandboxTick runs here to catch a lost one).
func TestSandboxesSuspendedWhenSessionsEndDuringABurstOfCalls(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	ending := make([]session, 4)
	for i := range ending {
		ending[i] = w.session()
		// Incompressible, so that archiving it takes a while.
		w.exec(ending[i], "head -c 24000000 /dev/urandom > noise.bin")
	}
	busy := w.session()
	body := `{"tool": "skill__helper__read", "input": {"path": "bin/hello.sh"}, "wait_seconds": 10}`
	stop := make(chan struct{})
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", w.srv.URL+"/api/v1/sessions/"+busy.ID+"/tool_calls", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+busy.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				} else {
					calls.Add(1)
				}
				if resp != nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	for calls.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	// Each next end comes while the sandbox of the one before is archived,
	// and a hundred calls or so have happened since.
	for _, s := range ending {
		if st := w.api(w.owner, "POST", "/sessions/"+s.ID+"/end", nil, nil); st != 200 {
			t.Fatalf("Session.end: %d", st)
		}
		for n := calls.Load() + 100; calls.Load() < n; {
			time.Sleep(time.Millisecond)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < len(ending); {
		if w.sandboxOf(ending[i]).State == "suspended" {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Errorf("20 s after its session ended (during %d calls), the sandbox of session %d of %d is still %s",
				calls.Load(), i+1, len(ending), w.sandboxOf(ending[i]).State)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Errorf("%d of the burst's calls failed", failed.Load())
	}
}

func TestSandboxSuspendedWhenSessionEndsAndRecoveredAfterRestart(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	ended, crashed := w.session(), w.session()
	w.exec(ended, "echo a > a.txt")
	w.exec(crashed, "echo b > b.txt")
	if st := w.api(w.owner, "POST", "/sessions/"+ended.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.sandboxOf(ended).State != "suspended" {
		if time.Now().After(deadline) {
			t.Fatalf("the ended session's sandbox is still %s", w.sandboxOf(ended).State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, files := w.download(w.owner, w.sandboxOf(ended).ID); files["a.txt"] != "a\n" {
		t.Fatalf("ended session's archive: %v", files)
	}

	// A second server over the same database and folders, as after a crash
	// that left the other sandbox "running": it is archived and suspended.
	restarted := runtime.New(w.rt.DB(), runtime.Options{Clock: w.clock, Log: quiet})
	defer restarted.Close()
	startSandboxes(t, restarted, w.base, local.Config{})
	var rec models.Sandbox
	w.rt.DB().First(&rec, "session_id = ?", crashed.ID)
	if rec.State != "suspended" || rec.ArchiveAt == nil {
		t.Fatalf("after the restart the crashed sandbox is %+v; want suspended with an archive", rec)
	}
}
