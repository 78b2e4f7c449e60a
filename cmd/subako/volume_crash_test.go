package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime/logtest"
)

// A real `subako serve` killed with SIGKILL in the middle of a Volume.put
// that replaces a file: the old file is what is on disk and what the API
// answers after a restart, the upload's temporary file is gone, and
// `subako do` moves files both ways.
func TestKill9MidUploadLeavesTheOldFile(t *testing.T) {
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
	addr := freeAddr(t)
	base := "http://" + addr
	logs := &logtest.Buffer{}
	start := func() *exec.Cmd {
		return startServer(t, bin, base, logs, append([]string{"serve", "--addr", addr, "--volume-max-file", "64MiB", "--min-free-disk", "1MiB"}, dbArgs...)...)
	}
	srv := start()
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	t.Setenv("SUBAKO_URL", base)
	t.Setenv("SUBAKO_TOKEN", strings.TrimSpace(tok.String()))

	var ids struct{ ID string }
	doJSON(t, &ids, "Agent.create", `{"name": "files"}`)
	doJSON(t, &ids, "Version.create", `{"agent": "`+ids.ID+`"}`)
	version := ids.ID
	doJSON(t, &ids, "Version.update", `{"version": "`+version+`", "body": {}}`)
	doJSON(t, &ids, "Version.publish", `{"version": "`+version+`"}`)
	doJSON(t, &ids, "Session.create", `{"version": "`+version+`"}`)
	session := ids.ID

	old := filepath.Join(t.TempDir(), "old.txt")
	os.WriteFile(old, []byte("the old report\n"), 0o644)
	var out bytes.Buffer
	if err := doCmd([]string{"Volume.put", "--json", `{"session": "` + session + `", "path": "docs/report one.txt"}`, "--body-file", old}, nil, &out); err != nil {
		t.Fatalf("do Volume.put: %v", err)
	}
	var put struct {
		Path string
		Size int64
	}
	if json.Unmarshal(out.Bytes(), &put); put.Path != "docs/report one.txt" || put.Size != 15 {
		t.Fatalf("Volume.put printed %s", out.String())
	}

	// Replace it with 32 MiB sent slowly; kill the server once part of it is on disk.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PUT", base+"/api/v1/sessions/"+session+"/volume/docs/report%20one.txt", pr)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok.String()))
	req.ContentLength = 32 << 20
	go http.DefaultClient.Do(req)
	tmp := filepath.Join(dir, "volumes", session, "tmp")
	chunk := bytes.Repeat([]byte("new "), 64<<10)
	deadline := time.Now().Add(30 * time.Second)
	for partial := int64(0); partial < 1<<20; {
		if _, err := pw.Write(chunk); err != nil {
			t.Fatalf("the upload stopped early: %v", err)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) == 1 {
			if st, err := ents[0].Info(); err == nil {
				partial = st.Size()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partial upload appeared in %s", tmp)
		}
	}
	srv.Process.Signal(os.Kill)
	srv.Wait()
	pw.CloseWithError(io.ErrUnexpectedEOF)
	file := filepath.Join(dir, "volumes", session, "files", "docs", "report one.txt")
	if b, err := os.ReadFile(file); err != nil || string(b) != "the old report\n" {
		t.Fatalf("after the kill the file holds %d bytes (%v), want the old report", len(b), err)
	}

	srv = start()
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("the restart left the cut upload in %s: %v", tmp, ents)
	}
	out.Reset()
	if err := doCmd([]string{"Volume.get", "--json", `{"session": "` + session + `", "path": "docs/report one.txt"}`}, nil, &out); err != nil || out.String() != "the old report\n" {
		t.Fatalf("do Volume.get after the restart: %q %v", out.String(), err)
	}
	var list struct {
		Count      int
		TotalBytes int64 `json:"total_bytes"`
	}
	doJSON(t, &list, "Volume.list", `{"session": "`+session+`"}`)
	if list.Count != 1 || list.TotalBytes != 15 {
		t.Fatalf("Volume.list after the restart: %+v", list)
	}
}
