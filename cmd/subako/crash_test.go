package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/logtest"
	"github.com/subako/subako/runtime/mcpclient/mcptest"
)

const crashToken = "crash-token-0123456789"

// A real `subako serve` killed with SIGKILL while clients make calls, some
// of them running for seconds, then started again on the same data: every
// call is finished or marked interrupted, every call has its
// ToolCall.create Action, every interrupted call the Action that says so,
// and every call a client was told had succeeded is recorded succeeded.
func TestKill9DuringCallsLeavesEveryCallFinishedOrInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := filepath.Join(t.TempDir(), "subako")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
	mcpURL := mcptest.StartEverything(t, crashToken)
	addr := freeAddr(t)
	base := "http://" + addr
	logs := &logtest.Buffer{}
	start := func() *exec.Cmd {
		return startServer(t, bin, base, logs, append([]string{"serve", "--addr", addr, "--egress-allow-private"}, dbArgs...)...)
	}
	srv := start()
	t.Setenv("SUBAKO_URL", base)
	t.Setenv("SUBAKO_TOKEN", strings.TrimSpace(tok.String()))

	var ids struct{ ID string }
	doJSON(t, &ids, "Vault.create", `{"name": "crash"}`)
	vaultID := ids.ID
	doJSON(t, &ids, "Credential.set", `{"vault": "`+vaultID+`", "prefix": "`+mcpURL+`", "type": "bearer", "secret": "`+crashToken+`"}`)
	doJSON(t, &ids, "Agent.create", `{"name": "crash"}`)
	agentID := ids.ID
	doJSON(t, &ids, "Version.create", `{"agent": "`+agentID+`"}`)
	versionID := ids.ID
	doJSON(t, &ids, "Version.update", `{"version": "`+versionID+`", "body": {"mcp_servers": [{"name": "everything", "url": "`+mcpURL+`", "default_policy": "allow"}]}}`)
	doJSON(t, &ids, "Version.publish", `{"version": "`+versionID+`"}`)
	doJSON(t, &ids, "Session.create", `{"version": "`+versionID+`", "vaults": ["`+vaultID+`"]}`)
	session := ids.ID

	// Clients call until the server is gone: quick echoes and operations of
	// two seconds, so that some calls are running at the kill.
	var succeeded sync.Map
	var done atomic.Int64
	var stopping atomic.Bool
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Go(func() {
			for i := 0; !stopping.Load(); i++ {
				tool, input := "mcp__everything__echo", `{"message": "hi"}`
				if (c+i)%3 == 0 {
					tool, input = "mcp__everything__trigger-long-running-operation", `{"duration": 2, "steps": 1}`
				}
				var out bytes.Buffer
				err := doCmd([]string{"ToolCall.create", "--json", `{"session": "` + session + `", "tool": "` + tool + `", "input": ` + input + `, "wait_seconds": 30}`}, nil, &out)
				if err != nil {
					if !stopping.Load() {
						t.Errorf("a call before the kill: %v", err)
					}
					return
				}
				var v struct{ ID, Status, Error string }
				if err := json.Unmarshal(out.Bytes(), &v); err != nil {
					t.Errorf("ToolCall.create printed %q", out.String())
					return
				}
				if v.Status == "succeeded" {
					succeeded.Store(v.ID, true)
					done.Add(1)
				} else if !stopping.Load() {
					t.Errorf("a call before the kill ended %s: %s", v.Status, v.Error)
				}
			}
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for done.Load() < 30 && time.Now().Before(deadline) && !t.Failed() {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the long operations of the last rounds are running
	stopping.Store(true)
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	wg.Wait()
	if done.Load() < 30 {
		t.Fatalf("only %d calls succeeded before the kill:\n%s", done.Load(), logs.String())
	}

	srv = start()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	})
	db, err := models.Open(dir, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var calls []struct{ ID, Status, Error string }
	if err := db.Table("tool_calls").Select("id", "status", "error").Find(&calls).Error; err != nil {
		t.Fatal(err)
	}
	var acts []struct{ Verb, Targets string }
	if err := db.Table("actions").Select("verb", "targets").Where("verb IN ?", []string{"ToolCall.create", "ToolCall.interrupt"}).Find(&acts).Error; err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, a := range acts {
		for _, id := range strings.Fields(a.Targets) {
			has[a.Verb+" "+id] = true
		}
	}
	interrupted := 0
	status := map[string]string{}
	for _, c := range calls {
		switch {
		case c.Status == "succeeded" || c.Status == "refused":
		case c.Status == "failed" && strings.HasPrefix(c.Error, "interrupted:"):
			interrupted++
			if !has["ToolCall.interrupt "+c.ID] {
				t.Errorf("interrupted call %s has no ToolCall.interrupt Action", c.ID)
			}
		case c.Status == "failed":
		default:
			t.Errorf("after the restart call %s is still %s", c.ID, c.Status)
		}
		if !has["ToolCall.create "+c.ID] {
			t.Errorf("call %s (%s) has no ToolCall.create Action", c.ID, c.Status)
		}
		status[c.ID] = c.Status
	}
	succeeded.Range(func(id, _ any) bool {
		if status[id.(string)] != "succeeded" {
			t.Errorf("call %s answered succeeded is recorded %q", id, status[id.(string)])
		}
		return true
	})
	if interrupted == 0 {
		t.Errorf("no call was running at the kill (%d calls): the test did not test the crash", len(calls))
	}
	t.Logf("%s: %d calls, %d interrupted by the kill", db.Dialect, len(calls), interrupted)
}

// startServer starts the server binary with args and waits until base
// answers /readyz.
func startServer(t *testing.T, bin, base string, logs *logtest.Buffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A fresh data folder compiles the shipped function packages before it
	// is ready: a minute or more on a loaded machine.
	deadline := time.Now().Add(4 * time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the server was not ready within 4 minutes:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
