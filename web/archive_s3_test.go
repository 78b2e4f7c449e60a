package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/objstore/s3test"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// newS3SandboxWorld is newSandboxWorld with the archives in a real S3
// server's bucket.
func newS3SandboxWorld(t *testing.T, srv *s3test.Server) sandboxWorld {
	t.Helper()
	e := newEnv(t)
	w := &world{env: e, owner: longToken(e.owner())}
	agent, draft := e.agentWithDraft(w.owner)
	w.agent = agent
	cfg := `{"sandboxes": [{"name": "workbench", "environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"}, "default_policy": "allow"}]}`
	if st, body := e.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config", cfg); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := e.api(w.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	w.version = draft.ID
	base := sandboxDirs(t)
	driver, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := srv.Store(t, "web")
	e.rt.AddReadyCheck(runtime.ReadyCheck{Name: "archive_store", Check: store.Ping, Degrades: true})
	err = e.rt.StartSandboxes(t.Context(), runtime.SandboxOptions{Driver: driver, Archives: store,
		Dir: filepath.Join(base, "machines"), SkillsDir: filepath.Join(base, "skills")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rt.StopSandboxes(context.Background()) }) // t.Context() is cancelled before cleanups run
	return sandboxWorld{world: w, base: base}
}

// rawGet is a GET with a bearer token, answering the status, headers and body.
func (w *world) rawGet(token, path string) (int, http.Header, []byte) {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// An archive in S3 downloads from the API and the console as it was
// written; with the store down a download, an upload and a restore answer
// what failed (503 store_unavailable naming the store, never its secret),
// /readyz says the store fails, and nothing is lost: once it is back the
// same archive downloads and restores.
func TestArchivesInS3DownloadAndSurviveTheStoreGoingDown(t *testing.T) {
	srv := s3test.Start(t)
	w := newS3SandboxWorld(t, srv)
	s := w.session()
	w.exec(s, "echo kept > notes.txt; head -c 3145728 /dev/urandom > noise.bin")
	w.advance(sandbox.DefaultIdleTimeout)
	sb := w.sandboxOf(s)
	if sb.State != "suspended" || sb.Archive == nil || sb.ArchiveError != "" {
		t.Fatalf("after suspension: %+v, want an archive in the store", sb)
	}

	st, hdr, files := w.download(w.owner, sb.ID)
	if st != 200 || files["notes.txt"] != "kept\n" || len(files["noise.bin"]) != 3<<20 {
		t.Fatalf("API download: %d, %d files", st, len(files))
	}
	if hdr.Get("Content-Length") == "" || hdr.Get("Content-Length") != jsonInt(sb.Archive.Bytes) {
		t.Fatalf("Content-Length %q, want the archive's %d bytes", hdr.Get("Content-Length"), sb.Archive.Bytes)
	}
	resp, got := w.browserOf().do("GET", "/sandboxes/"+sb.ID+"/archive", nil, nil)
	if resp.StatusCode != 200 || int64(len(got)) != sb.Archive.Bytes {
		t.Fatalf("console download: %d, %d bytes; want the %d-byte archive", resp.StatusCode, len(got), sb.Archive.Bytes)
	}

	srv.Stop(t)
	noSecret := func(what string, b []byte) {
		t.Helper()
		if bytes.Contains(b, []byte(srv.SecretKey)) || bytes.Contains(b, []byte(srv.AccessKey)) {
			t.Fatalf("%s shows a key of the store:\n%s", what, b)
		}
	}
	code, hdr, body := w.rawGet(w.owner, "/api/v1/sandboxes/"+sb.ID+"/archive")
	var p problem
	json.Unmarshal(body, &p)
	if code != 503 || p.Code != "store_unavailable" || !strings.Contains(p.Detail, srv.URL("web")) || hdr.Get("Retry-After") == "" {
		t.Fatalf("download with the store down: %d %s (Retry-After %q); want 503 store_unavailable naming %s", code, body, hdr.Get("Retry-After"), srv.URL("web"))
	}
	noSecret("the 503", body)
	resp, page := w.browserOf().do("GET", "/sandboxes/"+sb.ID+"/archive", nil, nil)
	if resp.StatusCode != 503 || !strings.Contains(page, "unavailable") {
		t.Fatalf("console download with the store down: %d", resp.StatusCode)
	}
	noSecret("the console's error page", []byte(page))

	st, _, p = w.putArchive(w.owner, sb.ID, tarGzOf(t, [2]string{"replaced.txt", "no\n"}))
	if st != 503 || p.Code != "store_unavailable" {
		t.Fatalf("upload with the store down: %d %+v, want 503 store_unavailable", st, p)
	}
	st, c := w.call(s.Token, s.ID, execTool, map[string]any{"command": "cat notes.txt", "timeout_secs": 30}, 60)
	if c.Status == "succeeded" || !strings.Contains(c.Error, srv.URL("web")) || !strings.Contains(c.Error, "unavailable") {
		t.Fatalf("exec needing a restore with the store down: %d %+v; want a failure naming the store", st, c)
	}
	noSecret("the failed call", []byte(c.Error))
	// Every replica shares the store: its outage leaves this one ready (200,
	// the verbs not needing the store still work) with the store degraded.
	rresp, rbody := w.browserOf().get("/readyz")
	if rresp.StatusCode != 200 || !strings.Contains(rbody, `"ready":true`) || !strings.Contains(rbody, `{"name":"archive_store","state":"degraded"`) {
		t.Fatalf("/readyz with the store down: %d %s; want 200, ready, archive_store degraded", rresp.StatusCode, rbody)
	}
	noSecret("readiness", []byte(rbody))

	srv.Restart(t)
	if st, _, files := w.download(w.owner, sb.ID); st != 200 || files["notes.txt"] != "kept\n" || len(files) != 2 {
		t.Fatalf("after the outage the download is %d with %v, want the archive as it was", st, files)
	}
	if out := w.exec(s, "cat notes.txt; wc -c < noise.bin"); out.Stdout != "kept\n3145728\n" {
		t.Fatalf("after the outage the restore gives %+v", out)
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
