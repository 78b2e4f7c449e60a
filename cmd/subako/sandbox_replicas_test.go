package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
	"github.com/subako/subako/runtime/objstore/s3test"
)

// sandboxReplica is one `subako serve` of TestSandboxesAcrossTwoReplicas.
type sandboxReplica struct {
	name, base string
	cmd        *exec.Cmd
	logs       *logtest.Buffer
}

const replicaSecret = "replica-secret-0123456789abcdef"

// replicaWorld is two `subako serve` replicas on one PostgreSQL database
// and one S3 store, an owner's token and a published version granting a
// sandbox (and, with mcpURL, the everything MCP server).
type replicaWorld struct {
	t        *testing.T
	replicas []*sandboxReplica
	db       *models.DB
	token    string
	version  string
	vault    string
}

func newReplicaWorld(t *testing.T, idle, mcpURL string) *replicaWorld {
	t.Helper()
	if os.Getenv(modelstest.EnvURL) == "" {
		t.Skip("two replicas need PostgreSQL: set " + modelstest.EnvURL)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("sandboxes need bubblewrap (apt-get install -y bubblewrap)")
	}
	store := s3test.Start(t) // skips, saying how to build weed, when it is absent
	bin := buildServer(t)
	dir, dbURL := modelstest.Fresh(t)
	dbArgs := []string{"--data", dir, "--database-url", dbURL}
	if err := userCmd(append([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin"}, dbArgs...),
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	var tok bytes.Buffer
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--expires", "1h"}, dbArgs...), &tok); err != nil {
		t.Fatal(err)
	}
	w := &replicaWorld{t: t, token: strings.TrimSpace(tok.String())}

	// The servers run as nobody, so their sandboxes boot the host's root
	// (no release image to build); their folders must let it through.
	root := t.TempDir()
	for d := root; d != "/" && d != "."; d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	os.Chmod(filepath.Dir(bin), 0o755)
	for _, name := range []string{"A", "B"} {
		data := filepath.Join(root, name)
		tmp := filepath.Join(root, name+"-tmp")
		for _, d := range []string{data, tmp} {
			os.MkdirAll(d, 0o700)
			os.Chown(d, 65534, 65534)
		}
		r := &sandboxReplica{name: name, base: "http://" + freeAddr(t), logs: &logtest.Buffer{}}
		args := append([]string{"serve", "--addr", strings.TrimPrefix(r.base, "http://"), "--base-url", r.base, "--allowed-hosts", "127.0.0.1",
			"--data", data, "--database-url", dbURL, "--advertise-url", r.base, "--sandbox-idle-timeout", idle, "--egress-allow-private"}, store.Args("replicas")...)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), append(store.Env(), "TMPDIR="+tmp, "SUBAKO_INTERNAL_SECRET="+replicaSecret,
			"SUBAKO_SECRET_KEY=one-key-every-replica-shares-0123456789")...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		cmd.Stdout, cmd.Stderr = r.logs, r.logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.cmd = cmd
		w.replicas = append(w.replicas, r)
		t.Cleanup(func() {
			if r.cmd.ProcessState == nil {
				r.cmd.Process.Signal(syscall.SIGTERM)
				r.cmd.Wait()
			}
			if t.Failed() {
				t.Logf("replica %s:\n%s", r.name, r.logs.String())
			}
		})
		waitReady(t, r)
	}
	db, err := models.Open(dir, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w.db = db

	w.on(w.replicas[0])
	var ids struct{ ID string }
	doJSON(t, &ids, "Agent.create", `{"name": "replicas"}`)
	doJSON(t, &ids, "Version.create", `{"agent": "`+ids.ID+`"}`)
	w.version = ids.ID
	servers := ""
	if mcpURL != "" {
		doJSON(t, &ids, "Vault.create", `{"name": "replicas"}`)
		w.vault = ids.ID
		doJSON(t, &ids, "Credential.set", `{"vault": "`+w.vault+`", "prefix": "`+mcpURL+`", "type": "bearer", "secret": "`+replicaMCPToken+`"}`)
		servers = `"mcp_servers": [{"name": "everything", "url": "` + mcpURL + `", "default_policy": "allow"}], `
	}
	doJSON(t, &ids, "Version.update", `{"version": "`+w.version+`", "body": {`+servers+`"sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"}, "default_policy": "allow"}]}}`)
	doJSON(t, &ids, "Version.publish", `{"version": "`+w.version+`"}`)
	return w
}

const replicaMCPToken = "replica-mcp-token-0123456789"

// on points `subako do` at replica r.
func (w *replicaWorld) on(r *sandboxReplica) {
	w.t.Setenv("SUBAKO_URL", r.base)
	w.t.Setenv("SUBAKO_TOKEN", w.token)
}

// session starts a session of the world's version.
func (w *replicaWorld) session(title string) string {
	var ids struct{ ID string }
	vaults := ""
	if w.vault != "" {
		vaults = `, "vaults": ["` + w.vault + `"]`
	}
	doJSON(w.t, &ids, "Session.create", `{"version": "`+w.version+`"`+vaults+`}`)
	return ids.ID
}

// replicaOf is the id of the replica advertising base.
func (w *replicaWorld) replicaOf(base string) string {
	var id string
	w.db.Raw("SELECT id FROM replicas WHERE url = ?", base).Scan(&id)
	return id
}

// Two real `subako serve` processes on one PostgreSQL database and one
// real S3 store (SeaweedFS): an exec through B runs in the sandbox A owns
// (B has no copy: the file A's exec wrote is there, and A's next exec sees
// what B's wrote); /internal/ refuses a request without the secret; A
// suspends it (archive in the store), runs it again and writes more, is
// killed with kill -9; an exec through B then restores the sandbox from
// the store with its archived /workspace, B owns it, and the sandbox says
// what the failover lost.
func TestSandboxesAcrossTwoReplicas(t *testing.T) {
	w := newReplicaWorld(t, "10s", "")
	a, b, db, token, session := w.replicas[0], w.replicas[1], w.db, w.token, w.session("")
	replicaOf := w.replicaOf
	on := w.on

	exec := func(r *sandboxReplica, command string) string {
		t.Helper()
		on(r)
		input, _ := json.Marshal(map[string]any{"session": session, "tool": "sandbox__workbench__exec",
			"input": map[string]any{"command": command, "timeout_secs": 30}, "wait_seconds": 120})
		var c struct {
			Status, Error string
			Output        struct {
				ExitCode       int `json:"exit_code"`
				Stdout, Stderr string
			}
		}
		doJSON(t, &c, "ToolCall.create", string(input))
		if c.Status != "succeeded" || c.Output.ExitCode != 0 {
			t.Fatalf("exec %q through %s: %s %s, exit %d, stderr %q", command, r.name, c.Status, c.Error, c.Output.ExitCode, c.Output.Stderr)
		}
		return c.Output.Stdout
	}
	type sandboxRow struct {
		ID, State, ReplicaID, ArchiveNote string
	}
	row := func() sandboxRow {
		var s sandboxRow
		db.Raw("SELECT id, state, replica_id, archive_note FROM sandboxes WHERE session_id = ?", session).Scan(&s)
		return s
	}

	// An exec through B runs on A, which owns the sandbox.
	exec(a, "echo archived > /workspace/kept.txt")
	if s := row(); s.ReplicaID != replicaOf(a.base) || s.State != "running" {
		t.Fatalf("after an exec through A the sandbox is %+v; want running on A (%s)", s, replicaOf(a.base))
	}
	if out := exec(b, "cat /workspace/kept.txt && echo from-b >> /workspace/kept.txt"); out != "archived\n" {
		t.Fatalf("an exec through B read %q: it did not run in A's sandbox", out)
	}
	if out := exec(a, "cat /workspace/kept.txt"); out != "archived\nfrom-b\n" {
		t.Fatalf("A read %q after B's exec wrote to the sandbox", out)
	}
	if s := row(); s.ReplicaID != replicaOf(a.base) {
		t.Fatalf("after B's exec the sandbox is held by %q, want A", s.ReplicaID)
	}
	var view struct{ Replica string }
	on(b)
	doJSON(t, &view, "Sandbox.get", `{"sandbox": "`+row().ID+`"}`)
	if view.Replica != replicaOf(a.base) {
		t.Errorf("Sandbox.get through B names replica %q, want A's %s", view.Replica, replicaOf(a.base))
	}
	if m := metric(t, b, token, "subako_sandbox_forwarded_total"); m < 1 {
		t.Errorf("B's /metrics counts %v forwarded requests, want at least 1", m)
	}
	// The calls' events cross to the other replica, and /metrics counts them.
	waitFor(t, "B's /metrics counts events heard from A", 15*time.Second, func() bool {
		return metric(t, b, token, "subako_events_replicas_received_total") >= 1
	})
	if m := metric(t, a, token, "subako_events_replicas_sent_total"); m < 1 {
		t.Errorf("A's /metrics counts %v events sent to the other replicas, want at least 1", m)
	}
	for _, r := range []*sandboxReplica{a, b} {
		if m := metric(t, r, token, "subako_events_replicas_not_sent_total"); m != 0 {
			t.Errorf("%s's /metrics counts %v events not sent to the other replicas, want 0", r.name, m)
		}
	}

	// /internal/ answers only the shared secret.
	for _, auth := range []string{"", "Bearer wrong-secret-0123456789abcdef", "Bearer " + token} {
		req, _ := http.NewRequest("POST", a.base+"/internal/v1/exec", strings.NewReader(`{}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/internal/v1/exec with %q answered %d, want 401", strings.SplitN(auth, " ", 2)[0], resp.StatusCode)
		}
	}

	// A suspends it when idle (its archive goes to the store), runs it
	// again, writes what no archive holds, and dies.
	waitFor(t, "A suspends the idle sandbox", 40*time.Second, func() bool { return row().State == "suspended" })
	if s := row(); s.ReplicaID != "" {
		t.Errorf("a suspended sandbox is still held by %q", s.ReplicaID)
	}
	if out := exec(a, "cat /workspace/kept.txt && echo lost > /workspace/lost.txt"); out != "archived\nfrom-b\n" {
		t.Fatalf("A restored %q", out)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()

	out := exec(b, "cat /workspace/kept.txt; ls /workspace")
	if out != "archived\nfrom-b\nkept.txt\n" {
		t.Errorf("after A died, an exec through B found %q; want the archived /workspace (kept.txt only)", out)
	}
	s := row()
	if s.ReplicaID != replicaOf(b.base) || s.State != "running" {
		t.Errorf("after the failover the sandbox is %+v; want running on B (%s)", s, replicaOf(b.base))
	}
	if !strings.Contains(s.ArchiveNote, "lost: the work since the last archive at") {
		t.Errorf("the sandbox's note after the failover is %q; want it to say what was lost", s.ArchiveNote)
	}
	if m := metric(t, b, token, "subako_sandbox_failovers_total"); m != 1 {
		t.Errorf("B's /metrics counts %v failovers, want 1", m)
	}
}

// waitReady waits until r answers /readyz.
func waitReady(t *testing.T, r *sandboxReplica) {
	t.Helper()
	// A fresh data folder compiles the shipped function packages first
	// (20 s or more each on a loaded machine).
	waitFor(t, "replica "+r.name+" ready", 4*time.Minute, func() bool {
		resp, err := http.Get(r.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for: %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metric reads one unlabelled figure of r's /metrics.
func metric(t *testing.T, r *sandboxReplica, token, name string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", r.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			json.Unmarshal([]byte(v), &f)
			return f
		}
	}
	t.Errorf("/metrics of %s has no %s (%d)", r.name, name, resp.StatusCode)
	return -1
}

// A bounded load run, gated by SUBAKO_LOAD_RUN=1 (two minutes and more):
// 50 sessions make mixed calls (the everything server's echo; every fifth
// session a sandbox exec in turn) for SUBAKO_LOAD_SECONDS (60) through
// both replicas in turn, then as long through replica A alone. No call
// may fail; the figures go to docs/benchmarks.md.
func TestLoadTwoReplicas(t *testing.T) {
	if os.Getenv("SUBAKO_LOAD_RUN") == "" {
		t.Skip("a load run of two minutes: set SUBAKO_LOAD_RUN=1")
	}
	secs := 60
	if v, err := strconv.Atoi(os.Getenv("SUBAKO_LOAD_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	mcpURL := mcptest.StartEverything(t, replicaMCPToken)
	w := newReplicaWorld(t, "5m", mcpURL)
	sessions := make([]string, 50)
	for i := range sessions {
		sessions[i] = w.session("")
	}
	phase := func(name string, targets []*sandboxReplica) {
		var mu sync.Mutex
		var lat []time.Duration
		var calls, execs, failed int
		stop := time.Now().Add(time.Duration(secs) * time.Second)
		var wg sync.WaitGroup
		for i, s := range sessions {
			wg.Go(func() {
				for n := 0; time.Now().Before(stop); n++ {
					r := targets[(i+n)%len(targets)]
					tool, input := "mcp__everything__echo", `{"message": "hi"}`
					if i%5 == 0 && n%2 == 1 {
						tool, input = "sandbox__workbench__exec", `{"command": "echo hi >> /workspace/log && wc -l < /workspace/log", "timeout_secs": 30}`
					}
					began := time.Now()
					status, out := callTool(r.base, w.token, s, tool, input)
					d := time.Since(began)
					mu.Lock()
					calls++
					if strings.HasPrefix(tool, "sandbox") {
						execs++
					}
					lat = append(lat, d)
					if status != "succeeded" {
						failed++
						if failed <= 3 {
							t.Errorf("%s: %s through %s: %s %s", name, tool, r.name, status, out)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		pct := func(p float64) time.Duration {
			return lat[min(len(lat)-1, int(float64(len(lat))*p))].Round(time.Millisecond)
		}
		t.Logf("%s: %d calls (%d sandbox execs) in %d s, %.0f calls/s, %d failed, p50 %s, p99 %s, max %s",
			name, calls, execs, secs, float64(calls)/float64(secs), failed, pct(0.5), pct(0.99), lat[len(lat)-1].Round(time.Millisecond))
	}
	phase("two replicas", w.replicas)
	phase("replica A alone", w.replicas[:1])
}

// callTool makes one call and returns its status (or the HTTP failure).
func callTool(base, token, session, tool, input string) (string, string) {
	body := `{"tool": "` + tool + `", "input": ` + input + `, "wait_seconds": 60}`
	req, _ := http.NewRequest("POST", base+"/api/v1/sessions/"+session+"/tool_calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "http error", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var c struct{ Status, Error string }
	if json.Unmarshal(b, &c) != nil || c.Status == "" {
		return resp.Status, string(b)
	}
	return c.Status, c.Error
}
