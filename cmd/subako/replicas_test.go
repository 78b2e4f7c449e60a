package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

var (
	serverBinOnce sync.Once
	serverBin     string
	serverBinErr  error
)

// buildServer builds the subako binary once per test run.
func buildServer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	serverBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "subako-bin-")
		if err != nil {
			serverBinErr = err
			return
		}
		serverBin = filepath.Join(dir, "subako")
		if out, err := exec.Command("go", "build", "-o", serverBin, ".").CombinedOutput(); err != nil {
			serverBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serverBinErr != nil {
		t.Fatal(serverBinErr)
	}
	return serverBin
}

// A second `subako serve` on the same SQLite file is refused at once with
// an error naming the lock file and pointing to PostgreSQL; once the first
// is gone (even by kill -9) the file is free again.
func TestSecondServeOnOneSQLiteFileIsRefused(t *testing.T) {
	bin := buildServer(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	logs := &logtest.Buffer{}
	first := startServer(t, bin, "http://"+addr, logs, "serve", "--addr", addr, "--data", dir)
	t.Cleanup(func() { first.Process.Kill(); first.Wait() })

	second := exec.Command(bin, "serve", "--addr", freeAddr(t), "--data", dir)
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the second serve exited 0:\n%s", out.String())
		}
	case <-time.After(30 * time.Second):
		second.Process.Kill()
		t.Fatalf("the second serve on the same SQLite file kept running:\n%s", out.String())
	}
	lock := filepath.Join(dir, models.SQLiteLockName)
	for _, want := range []string{lock, "PostgreSQL", fmt.Sprint(first.Process.Pid)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out.String())
		}
	}

	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	third := startServer(t, bin, "http://"+addr, logs, "serve", "--addr", addr, "--data", dir)
	third.Process.Signal(syscall.SIGTERM)
	third.Wait()
}

// replica is one `subako serve` process of a two-replica test.
type replica struct {
	name, base string
	cmd        *exec.Cmd
	logs       *logtest.Buffer
	start      func() *exec.Cmd
}

// api sends one JSON API request with a bearer token and decodes the answer.
func api(t *testing.T, base, token, method, path, body string, into any) int {
	t.Helper()
	req, err := http.NewRequest(method, base+"/api/v1"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Errorf("%s %s on %s: %d %s", method, path, base, resp.StatusCode, b)
		return resp.StatusCode
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Errorf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// Two real `subako serve` processes on one PostgreSQL database: a call
// waiting on A is approved through B and A's client has its result at
// once; an approvals page open on A shows an item created through B; an
// approval expires once; B's start leaves A's running call alone, and once
// A is killed (kill -9) and its heartbeat lapses, the call is marked
// interrupted exactly once.
func TestTwoReplicasOnOnePostgres(t *testing.T) {
	if os.Getenv(modelstest.EnvURL) == "" {
		t.Skip("two replicas need PostgreSQL: set " + modelstest.EnvURL)
	}
	bin := buildServer(t)
	dirA, dbURL := modelstest.Fresh(t)
	dirB := t.TempDir()
	// Replicas share the vault key: a credential sealed on B opens on A.
	t.Setenv("SUBAKO_SECRET_KEY", "replicas-test-vault-key-0123456789abcdef")
	if err := userCmd([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin", "--data", dirA, "--database-url", dbURL},
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := userCmd([]string{"add", "--email", "approver@example.com", "--access", "admin", "--password-stdin", "--data", dirA, "--database-url", dbURL},
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	token := func(email string) string {
		var b bytes.Buffer
		if err := tokenCmd([]string{"create", "--email", email, "--expires", "1h", "--data", dirA, "--database-url", dbURL}, &b); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(b.String())
	}
	ownerTok, approverTok := token("owner@example.com"), token("approver@example.com")
	mcpURL := mcptest.StartEverything(t, crashToken)

	newReplica := func(name, dir string) *replica {
		addr := freeAddr(t)
		r := &replica{name: name, base: "http://" + addr, logs: &logtest.Buffer{}}
		r.start = func() *exec.Cmd {
			r.cmd = startServer(t, bin, r.base, r.logs, "serve", "--addr", addr, "--egress-allow-private", "--data", dir, "--database-url", dbURL,
				"--replica-id", name, "--approval-timeout", "5s")
			return r.cmd
		}
		r.start()
		t.Cleanup(func() {
			if r.cmd.ProcessState == nil {
				r.cmd.Process.Signal(syscall.SIGTERM)
				r.cmd.Wait()
			}
			if t.Failed() {
				t.Logf("%s's log:\n%s", name, r.logs.String())
			}
		})
		return r
	}
	a := newReplica("rep-a", dirA)
	b := newReplica("rep-b", dirB)
	db, err := models.Open(dirA, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Both are ready, each with its parts, and know each other as alive.
	for _, r := range []*replica{a, b} {
		var rep runtime.ReadyReport
		resp, err := http.Get(r.base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		states := map[string]string{}
		for _, p := range rep.Parts {
			states[p.Name] = p.State
		}
		if !rep.Ready || rep.Replica != r.name || states["database"] != "ok" || states["events"] != "ok" {
			t.Fatalf("%s /readyz: %+v", r.name, rep)
		}
	}

	var ids struct{ ID string }
	api(t, b.base, ownerTok, "POST", "/vaults", `{"name": "replicas"}`, &ids)
	vault := ids.ID
	api(t, b.base, ownerTok, "PUT", "/vaults/"+vault+"/credentials", `{"prefix": "`+mcpURL+`", "type": "bearer", "secret": "`+crashToken+`"}`, &ids)
	api(t, b.base, ownerTok, "POST", "/agents", `{"name": "replicas"}`, &ids)
	api(t, b.base, ownerTok, "POST", "/agents/"+ids.ID+"/versions", `{}`, &ids)
	version := ids.ID
	api(t, b.base, ownerTok, "PUT", "/versions/"+version+"/config",
		`{"mcp_servers": [{"name": "everything", "url": "`+mcpURL+`", "default_policy": "allow", "tool_rules": {"echo": "ask"}}]}`, nil)
	api(t, b.base, ownerTok, "POST", "/versions/"+version+"/publish", `{}`, nil)
	api(t, b.base, ownerTok, "POST", "/sessions", `{"version": "`+version+`", "vaults": ["`+vault+`"]}`, &ids)
	session := ids.ID
	if t.Failed() {
		t.FailNow()
	}
	pendingApproval := func(call string) string {
		var ap string
		deadline := time.Now().Add(10 * time.Second)
		for ap == "" && time.Now().Before(deadline) {
			db.Raw("SELECT id FROM approvals WHERE tool_call_id = ? AND state = 'pending'", call).Scan(&ap)
			time.Sleep(20 * time.Millisecond)
		}
		if ap == "" {
			t.Fatalf("no pending approval for call %s", call)
		}
		return ap
	}

	t.Run("call waiting on A is approved through B", func(t *testing.T) {
		type answer struct {
			v  runtime.ToolCallView
			at time.Time
		}
		got := make(chan answer, 1)
		go func() {
			var v runtime.ToolCallView
			api(t, a.base, ownerTok, "POST", "/sessions/"+session+"/tool_calls",
				`{"tool": "mcp__everything__echo", "input": {"message": "across"}, "wait_seconds": 30}`, &v)
			got <- answer{v, time.Now()}
		}()
		var call string
		deadline := time.Now().Add(10 * time.Second)
		for call == "" && time.Now().Before(deadline) {
			db.Raw("SELECT id FROM tool_calls WHERE session_id = ? AND status = 'awaiting_approval'", session).Scan(&call)
			time.Sleep(20 * time.Millisecond)
		}
		ap := pendingApproval(call)
		decided := time.Now()
		api(t, b.base, approverTok, "POST", "/approvals/"+ap+"/approve", `{}`, nil)
		select {
		case ans := <-got:
			took := ans.at.Sub(decided)
			if ans.v.Status != "succeeded" || !strings.Contains(string(ans.v.Output), "across") {
				t.Fatalf("A's client got %s: %s %s", ans.v.Status, ans.v.Output, ans.v.Error)
			}
			// The waiter re-reads every 2 s anyway; the decision's event
			// crossing replicas is what makes the answer come sooner.
			if took >= 1500*time.Millisecond {
				t.Errorf("A's client had its result %s after B's approval: the event did not cross", took)
			}
			t.Logf("A's client had the result %s after the approval on B", took)
		case <-time.After(20 * time.Second):
			t.Fatal("A's client had no result 20 s after B's approval")
		}
	})

	var expiring string
	t.Run("approvals page on A shows an item created through B", func(t *testing.T) {
		jar, _ := cookiejar.New(nil)
		client := &http.Client{Jar: jar}
		resp, err := client.PostForm(a.base+"/login", url.Values{"email": {"approver@example.com"}, "password": {"correct-horse-battery"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", a.base+"/approvals/events", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("/approvals/events on A: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// The stream has begun (the queue as it stands) before B's call.
		select {
		case <-lines:
		case <-time.After(10 * time.Second):
			t.Fatal("the approvals stream on A sent nothing")
		}
		var v runtime.ToolCallView
		api(t, b.base, ownerTok, "POST", "/sessions/"+session+"/tool_calls",
			`{"tool": "mcp__everything__echo", "input": {"message": "page"}, "wait_seconds": 0}`, &v)
		expiring = v.ID
		ap := pendingApproval(v.ID)
		timeout := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the approvals stream on A ended")
				}
				if strings.Contains(l, ap) {
					return
				}
			case <-timeout:
				t.Fatalf("the approvals page on A did not show approval %s created through B", ap)
			}
		}
	})

	t.Run("an approval expires once across the two", func(t *testing.T) {
		if expiring == "" {
			t.Skip("no call from the page test")
		}
		var status string
		deadline := time.Now().Add(30 * time.Second)
		for status != "refused" && time.Now().Before(deadline) {
			db.Raw("SELECT status FROM tool_calls WHERE id = ?", expiring).Scan(&status)
			time.Sleep(100 * time.Millisecond)
		}
		if status != "refused" {
			t.Fatalf("the call waiting past --approval-timeout is %q", status)
		}
		time.Sleep(3 * time.Second) // both replicas' reapers tick again
		var n int64
		db.Raw("SELECT COUNT(*) FROM actions WHERE verb = 'Approval.expire' AND targets LIKE ?", "%"+expiring+"%").Scan(&n)
		if n != 1 {
			t.Errorf("the approval has %d Approval.expire Actions, want 1", n)
		}
		var holders []string
		db.Raw("SELECT holder FROM leases WHERE name = 'reaper'").Scan(&holders)
		if len(holders) != 1 {
			t.Errorf("reaper lease holders: %v", holders)
		}
	})

	t.Run("a cancel through B stops the call running on A", func(t *testing.T) {
		type answer struct {
			v  runtime.ToolCallView
			at time.Time
		}
		got := make(chan answer, 1)
		go func() {
			var v runtime.ToolCallView
			api(t, a.base, ownerTok, "POST", "/sessions/"+session+"/tool_calls",
				`{"tool": "mcp__everything__trigger-long-running-operation", "input": {"duration": 60, "steps": 60}, "wait_seconds": 90}`, &v)
			got <- answer{v, time.Now()}
		}()
		var call, rep string
		deadline := time.Now().Add(20 * time.Second)
		for call == "" && time.Now().Before(deadline) {
			db.Raw("SELECT id, replica_id FROM tool_calls WHERE session_id = ? AND status = 'running' AND tool LIKE ?", session, "%long-running%").
				Row().Scan(&call, &rep)
			time.Sleep(20 * time.Millisecond)
		}
		if call == "" || rep != "rep-a" {
			t.Fatalf("the long call is %q on replica %q", call, rep)
		}
		var v runtime.ToolCallView
		api(t, b.base, ownerTok, "POST", "/tool_calls/"+call+"/cancel", `{"reason": "changed my mind"}`, &v)
		cancelled := time.Now()
		if !v.Cancelled() {
			t.Fatalf("B's cancel answered %s %q", v.Status, v.Reason)
		}
		select {
		case ans := <-got:
			if !ans.v.Cancelled() || ans.v.Status != "failed" || !strings.Contains(ans.v.Reason, "changed my mind") {
				t.Fatalf("A's client got %s %q %q", ans.v.Status, ans.v.Reason, ans.v.Error)
			}
			t.Logf("A's client had the cancelled answer %s after the cancel on B", ans.at.Sub(cancelled).Round(time.Millisecond))
		case <-time.After(15 * time.Second):
			// Unstopped, the call would run until the MCP call's own 30 s
			// timeout ends it (the operation asks for 60 s).
			t.Fatal("A's client had no answer 15 s after B cancelled its call: the call still runs on A")
		}
		// The record stays as the cancel wrote it (A's run, stopped, did
		// not overwrite it), with one ToolCall.cancel Action by its caller.
		time.Sleep(2 * time.Second)
		var st, reason, by string
		db.Raw("SELECT status, reason FROM tool_calls WHERE id = ?", call).Row().Scan(&st, &reason)
		if st != "failed" || !strings.HasPrefix(reason, runtime.CallCancelledReason) {
			t.Errorf("the call's record after the cancel: %s %q", st, reason)
		}
		var n int64
		db.Raw("SELECT COUNT(*) FROM actions WHERE verb = 'ToolCall.cancel' AND targets LIKE ?", "%"+call+"%").Scan(&n)
		db.Raw("SELECT by_label FROM actions WHERE verb = 'ToolCall.cancel' AND targets LIKE ?", "%"+call+"%").Scan(&by)
		if n != 1 || !strings.Contains(by, "owner@example.com") {
			t.Errorf("the call has %d ToolCall.cancel Actions, by %q; want 1, by the owner", n, by)
		}
	})

	t.Run("kill -9 A: its running call is interrupted once its heartbeat lapses", func(t *testing.T) {
		var v runtime.ToolCallView
		api(t, a.base, ownerTok, "POST", "/sessions/"+session+"/tool_calls",
			`{"tool": "mcp__everything__trigger-long-running-operation", "input": {"duration": 120, "steps": 2}, "wait_seconds": 0}`, &v)
		if v.Status != "running" {
			t.Fatalf("the long call on A is %s", v.Status)
		}
		status := func() (st, replica string) {
			db.Raw("SELECT status, replica_id FROM tool_calls WHERE id = ?", v.ID).Row().Scan(&st, &replica)
			return
		}
		if st, rep := status(); rep != "rep-a" {
			t.Fatalf("the call on A is %s on replica %q", st, rep)
		}
		// B restarts while A lives: its start must not interrupt A's call.
		b.cmd.Process.Signal(syscall.SIGTERM)
		b.cmd.Wait()
		b.start()
		time.Sleep(3 * time.Second) // a reaper tick or two on each
		if st, _ := status(); st != "running" {
			t.Fatalf("B's start ended live A's running call: %s", st)
		}
		a.cmd.Process.Signal(syscall.SIGKILL)
		a.cmd.Wait()
		killed := time.Now()
		var st string
		for time.Since(killed) < 60*time.Second {
			if st, _ = status(); st != "running" {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		took := time.Since(killed)
		var errText string
		db.Raw("SELECT error FROM tool_calls WHERE id = ?", v.ID).Scan(&errText)
		if st != "failed" || !strings.HasPrefix(errText, "interrupted") {
			t.Fatalf("A's call after A was killed: %s %q", st, errText)
		}
		if took < runtime.ReplicaDeadAfter-5*time.Second {
			t.Errorf("A's call was interrupted %s after the kill, before A's heartbeat could lapse", took)
		}
		time.Sleep(3 * time.Second)
		var n int64
		db.Raw("SELECT COUNT(*) FROM actions WHERE verb = 'ToolCall.interrupt' AND targets LIKE ?", "%"+v.ID+"%").Scan(&n)
		if n != 1 {
			t.Errorf("A's call has %d ToolCall.interrupt Actions, want 1", n)
		}
		t.Logf("A's running call was interrupted %s after kill -9", took.Round(100*time.Millisecond))
	})
}
