package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/models/modelstest"
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

// `subako do Archive.upload` sends a file as the body, as is, from
// --body-file PATH or standard input; without one it says how, rather than
// sending the JSON input as the archive.
func TestDoSendsAFileAsTheBody(t *testing.T) {
	dir, url := modelstest.Fresh(t)
	db := []string{"--data", dir, "--database-url", url}
	if err := userCmd(append([]string{"add", "--email", "owner@example.com", "--access", "owner", "--password-stdin"}, db...),
		strings.NewReader("correct-horse-battery\n"), io.Discard); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tokenCmd(append([]string{"create", "--email", "owner@example.com", "--expires", "1h"}, db...), &out); err != nil {
		t.Fatal(err)
	}
	srv, rt := serveSandboxes(t, dir, url)
	t.Setenv("SUBAKO_URL", srv.URL)
	t.Setenv("SUBAKO_TOKEN", strings.TrimSpace(out.String()))

	var agent, ses, sb struct{ ID, State string }
	doJSON(t, &agent, "Agent.create", `{"name": "uploads"}`)
	var v struct{ ID string }
	doJSON(t, &v, "Version.create", `{"agent": "`+agent.ID+`"}`)
	config := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(config, []byte(`{"sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"},
	  "network": {"type": "none"}, "default_policy": "allow"}]}`), 0o644)
	if err := doCmd([]string{"Version.update", "--json", `{"version": "` + v.ID + `"}`, "--body-file", config}, nil, io.Discard); err != nil {
		t.Fatalf("Version.update --body-file: %v", err)
	}
	doJSON(t, &v, "Version.publish", `{"version": "`+v.ID+`"}`)
	doJSON(t, &ses, "Session.create", `{"version": "`+v.ID+`"}`)
	var call struct{ Status string }
	doJSON(t, &call, "ToolCall.create", `{"session": "`+ses.ID+`", "tool": "sandbox__workbench__exec", "input": {"command": "echo old > old.txt"}}`)
	if call.Status != "succeeded" {
		t.Fatalf("the exec: %+v", call)
	}
	doJSON(t, &struct{}{}, "Session.end", `{"session": "`+ses.ID+`"}`)
	if err := rt.SandboxTick(t.Context()); err != nil {
		t.Fatal(err)
	}
	var list []struct{ ID, State string }
	doJSON(t, &list, "Sandbox.list", `{"session": "`+ses.ID+`"}`)
	if len(list) != 1 || list[0].State != "suspended" {
		t.Fatalf("sandboxes after the session ended: %+v", list)
	}
	sb.ID = list[0].ID
	ids := `{"sandbox": "` + sb.ID + `"}`

	if err := doCmd([]string{"Archive.upload", "--json", ids}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "--body-file") {
		t.Fatalf("Archive.upload without a file: %v; want it to name --body-file", err)
	}
	if err := doCmd([]string{"Agent.get", "--json", `{"agent": "` + agent.ID + `"}`, "--body-file", config}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "JSON fields") {
		t.Fatalf("--body-file on a verb of JSON fields: %v", err)
	}
	for _, from := range []string{"file", "stdin"} {
		tgz := tarGz(t, "from-"+from+".txt", "uploaded from "+from+"\n")
		args, stdin := []string{"Archive.upload", "--json", ids, "--body-file", "-"}, io.Reader(bytes.NewReader(tgz))
		if from == "file" {
			path := filepath.Join(t.TempDir(), "up.tar.gz")
			os.WriteFile(path, tgz, 0o644)
			args[len(args)-1], stdin = path, nil
		}
		out.Reset()
		if err := doCmd(args, stdin, &out); err != nil || !strings.Contains(out.String(), "uploaded by owner@example.com") {
			t.Fatalf("Archive.upload from %s: %v\n%s", from, err, out.String())
		}
		out.Reset()
		if err := doCmd([]string{"Archive.download", "--json", ids}, nil, &out); err != nil || !bytes.Equal(out.Bytes(), tgz) {
			t.Fatalf("Archive.download after the upload from %s: %v; %d bytes, want the %d uploaded", from, err, out.Len(), len(tgz))
		}
	}
}

// serveSandboxes runs the console and API over the database the CLI wrote,
// with real sandboxes.
func serveSandboxes(t *testing.T, dir, url string) (*httptest.Server, *runtime.Runtime) {
	t.Helper()
	rt := openRuntime(t, dir, url)
	// t.TempDir is 0700: the sandbox uid must pass through it.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o711)
	}
	driver, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	archives, err := archive.NewLocal(filepath.Join(dir, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartSandboxes(t.Context(), runtime.SandboxOptions{Driver: driver, Archives: archives,
		Dir: filepath.Join(dir, "sandboxes"), SkillsDir: filepath.Join(dir, "skills")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.StopSandboxes(context.Background()) }) // t.Context() is cancelled before cleanups run
	return serveRuntime(t, rt), rt
}

// tarGz is a .tar.gz holding one file.
func tarGz(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(content))})
	io.WriteString(tw, content)
	tw.Close()
	zw.Close()
	return buf.Bytes()
}
