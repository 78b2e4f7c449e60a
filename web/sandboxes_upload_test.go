package web_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// tarGzOf packs name → content (names ending in / are folders) in order.
func tarGzOf(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e[1]))}
		if strings.HasSuffix(e[0], "/") {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e[1])
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// putArchive is Archive.upload through the API.
func (w *world) putArchive(token, id string, body []byte) (int, runtime.SandboxView, problem) {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, w.srv.URL+"/api/v1/sandboxes/"+id+"/archive", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v runtime.SandboxView
	var p problem
	if resp.StatusCode == 200 {
		json.Unmarshal(raw, &v)
	} else {
		json.Unmarshal(raw, &p)
	}
	return resp.StatusCode, v, p
}

// An operator uploads a .tar.gz as a suspended or retired sandbox's archive,
// through the API and the Sandboxes tab: checked as a restore would check
// it, refused whole when it would not restore, and restored by the next exec
// even over the folder a failed archiving kept.
func TestArchiveUploadGivesASandboxAWayBack(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, `echo kept > notes.txt; echo x > 'a\b'`)
	sb := w.sandboxOf(s)
	noise := make([]byte, 5<<20) // incompressible: the upload is past the 4 MB other requests get
	rand.Read(noise)
	good := tarGzOf(t, [2]string{"src/", ""}, [2]string{"src/notes.txt", "uploaded\n"}, [2]string{"noise.bin", string(noise)})
	if st, _, p := w.putArchive(w.owner, sb.ID, good); st != 409 || p.Code != "sandbox_running" {
		t.Fatalf("upload to a running sandbox: %d %+v, want 409 sandbox_running", st, p)
	}

	w.advance(sandbox.DefaultIdleTimeout)
	sb = w.sandboxOf(s)
	if sb.State != "suspended" || !strings.Contains(sb.ArchiveError, "backslash") {
		t.Fatalf("after suspension: %+v, want the backslash name refused", sb)
	}
	refused := []struct {
		name string
		body []byte
		want string
	}{
		{"climbing out", tarGzOf(t, [2]string{"../evil", "x"}), `"../evil": '..' is refused`},
		{"not gzip", []byte("just text"), "not a gzip archive"},
	}
	for _, tc := range refused {
		st, _, p := w.putArchive(w.owner, sb.ID, tc.body)
		if st != 422 || p.Code != "invalid_archive" || p.Field != "archive" || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("%s: %d %+v, want 422 invalid_archive naming %q", tc.name, st, p, tc.want)
		}
	}
	if after := w.sandboxOf(s); after.ArchiveError != sb.ArchiveError || after.ArchiveNote != "" {
		t.Fatalf("a refused upload changed the sandbox: %+v", after)
	}
	member := longToken(w.person(w.browserOf(), "member@example.com", "member"))
	if st, _, p := w.putArchive(member, sb.ID, good); st != 403 || p.MissingPermission != "Archive.upload session:"+sb.Session {
		t.Fatalf("a member's upload: %d %+v", st, p)
	}

	st, view, p := w.putArchive(w.owner, sb.ID, good)
	if st != 200 || view.ArchiveError != "" || !strings.Contains(view.ArchiveNote, "uploaded by owner@example.com at ") ||
		view.Archive == nil || view.Archive.Bytes != int64(len(good)) {
		t.Fatalf("upload: %d %+v %+v", st, view, p)
	}
	if out := w.exec(s, "cat src/notes.txt; ls; wc -c < noise.bin"); out.Stdout != "uploaded\nnoise.bin\nsrc\n5242880\n" {
		t.Fatalf("the next exec: %+v, want the uploaded archive, not the kept folder", out)
	}

	// Retired, from the Sandboxes tab.
	w.advance(sandbox.DefaultIdleTimeout)
	w.advance(sandbox.DefaultRetireAfter)
	sb = w.sandboxOf(s)
	tab := "/sessions/" + s.ID + "/sandboxes"
	owner := w.browserOf()
	if _, page := owner.get(tab); sb.State != "retired" || !strings.Contains(page, `data-testid="archive-upload"`) {
		t.Fatalf("the retired sandbox's tab offers no upload (state %s)", sb.State)
	}
	if st, to := consoleUpload(t, w, owner, sb.ID, tab, []byte("not gzip")); st != http.StatusSeeOther || to != tab {
		t.Fatalf("refused console upload: %d to %q", st, to)
	}
	if _, page := owner.get(tab); !strings.Contains(page, "A restore would refuse this archive") {
		t.Fatalf("the tab does not say why the upload was refused:\n%s", page)
	}
	if st, to := consoleUpload(t, w, owner, sb.ID, tab, tarGzOf(t, [2]string{"from-console.txt", "console\n"})); st != http.StatusSeeOther || to != tab {
		t.Fatalf("console upload: %d to %q", st, to)
	}
	if st, _, files := w.download(w.owner, sb.ID); st != 200 || files["from-console.txt"] != "console\n" || len(files) != 1 {
		t.Fatalf("after the console upload the archive holds %v (%d)", files, st)
	}
	if out := w.exec(s, "cat from-console.txt"); out.Stdout != "console\n" {
		t.Fatalf("exec after the console upload: %+v", out)
	}

	var acts []runtime.ActionView
	w.api(w.owner, "GET", "/actions?verb=Archive.upload", nil, &acts)
	verdicts := map[string]int{}
	for _, a := range acts {
		verdicts[a.Verdict]++
	}
	if verdicts["allowed"] != 2 || verdicts["refused"] != 1 || verdicts["failed"] != 4 {
		t.Errorf("Archive.upload actions: %v; want 2 allowed, the member's refused, 4 failed", verdicts)
	}
}

// consoleUpload posts the Sandboxes tab's upload form as b; it returns the
// status and where it redirects.
func consoleUpload(t *testing.T, w sandboxWorld, b *client, id, back string, archive []byte) (int, string) {
	t.Helper()
	body, ctype := multipartForm(map[string][]byte{"archive": archive}, nil)
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/sandboxes/"+id+"/archive/upload?back="+back, body)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}
