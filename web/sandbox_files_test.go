package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
)

// filesCall sends one request to a sandbox's files routes, the body as is.
func (w *world) filesCall(token, method, path string, body []byte) (int, []byte) {
	w.t.Helper()
	req, _ := http.NewRequest(method, w.srv.URL+"/api/v1"+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type filesListing struct {
	Path    string `json:"path"`
	Source  string `json:"source"`
	Entries []struct {
		Name, Path, Type, Target string
		Size                     int64
	} `json:"entries"`
	Limits struct {
		MaxReadBytes int64 `json:"max_read_bytes"`
	} `json:"limits"`
}

func (w *world) listFiles(token, id, dir string) filesListing {
	w.t.Helper()
	st, body := w.filesCall(token, "GET", "/sandboxes/"+id+"/files?path="+dir, nil)
	var l filesListing
	if st != 200 || json.Unmarshal(body, &l) != nil {
		w.t.Fatalf("Sandbox.files %q: %d %s", dir, st, body)
	}
	return l
}

func entryTypes(l filesListing) map[string]string {
	out := map[string]string{}
	for _, e := range l.Entries {
		out[e.Name] = e.Type
		if e.Target != "" {
			out[e.Name] += " → " + e.Target
		}
	}
	return out
}

func TestSandboxFilesListReadWriteRunningAndSuspended(t *testing.T) {
	w := newSandboxWorld(t, sandboxConfig, local.Config{})
	s := w.session()
	w.exec(s, "mkdir -p src && echo hello > src/a.txt && ln -s /etc/passwd src/pw && ln -s /etc src/etc && mkfifo src/fifo && ln -s a.txt src/alink && echo old > target.txt && ln -s target.txt swapped")
	id := w.sandboxOf(s).ID

	top := w.listFiles(w.owner, id, "")
	if top.Source != "machine" || entryTypes(top)["src"] != "folder" || top.Limits.MaxReadBytes != sandbox.MaxFileReadBytes {
		t.Fatalf("/workspace of a running sandbox: %+v", top)
	}
	src := entryTypes(w.listFiles(w.owner, id, "src"))
	if src["a.txt"] != "file" || src["pw"] != "link → /etc/passwd" || src["fifo"] != "other" || src["etc"] != "link → /etc" {
		t.Fatalf("src: %v", src)
	}
	if st, body := w.filesCall(w.owner, "GET", "/sandboxes/"+id+"/files/src/a.txt", nil); st != 200 || string(body) != "hello\n" {
		t.Fatalf("read src/a.txt: %d %q", st, body)
	}

	// Paths that would leave /workspace, or read differently elsewhere, are
	// refused by name; links are never followed out of it.
	for _, c := range []struct{ path, code string }{
		{"/files/..%2F..%2Fetc%2Fpasswd", "path_dot"},
		{"/files/a%5Cb", "path_backslash"},
		{"/files/%2Fetc%2Fpasswd", "path_absolute"},
		{"/files/src/pw", "not_a_file"},
		{"/files/src/fifo", "not_a_file"},
		{"/files/src", "not_a_file"},
		{"/files/src/etc/passwd", "link_refused"},
		{"/files?path=..", "path_dot"},
		{"/files?path=src%2Fa.txt", "not_a_folder"},
	} {
		st, body := w.filesCall(w.owner, "GET", "/sandboxes/"+id+c.path, nil)
		if st != 422 || !strings.Contains(string(body), `"code":"`+c.code+`"`) || !strings.Contains(string(body), `"field":"path"`) ||
			strings.Contains(string(body), "root:x:0") {
			t.Errorf("GET %s: %d %s; want 422 %s naming path", c.path, st, body, c.code)
		}
	}
	if st, body := w.filesCall(w.owner, "GET", "/sandboxes/"+id+"/files/nothing.txt", nil); st != 404 || !strings.Contains(string(body), "file_not_found") {
		t.Errorf("a missing file: %d %s", st, body)
	}

	// Writes: folders made, owned by the sandbox's user, a link at the path
	// replaced rather than followed.
	if st, body := w.filesCall(w.owner, "PUT", "/sandboxes/"+id+"/files/new/dir/b.txt", []byte("written\n")); st != 200 || !strings.Contains(string(body), `"size":8`) {
		t.Fatalf("write new/dir/b.txt: %d %s", st, body)
	}
	if out := w.exec(s, "cat new/dir/b.txt && echo more >> new/dir/b.txt && touch new/dir/c && echo ok"); out.Stdout != "written\nok\n" {
		t.Fatalf("the sandbox reads and changes what was written: %+v", out)
	}
	if st, _ := w.filesCall(w.owner, "PUT", "/sandboxes/"+id+"/files/swapped", []byte("new\n")); st != 200 {
		t.Fatalf("write over a link: %d", st)
	}
	if out := w.exec(s, "cat target.txt; test -L swapped || cat swapped"); out.Stdout != "old\nnew\n" {
		t.Fatalf("writing over a link changed its target or kept the link: %+v", out)
	}
	big := bytes.Repeat([]byte("x"), sandbox.MaxFileWriteBytes+1)
	if st, body := w.filesCall(w.owner, "PUT", "/sandboxes/"+id+"/files/big.bin", big); st != 422 ||
		!strings.Contains(string(body), "file_too_large") || !strings.Contains(string(body), "32 MiB") {
		t.Fatalf("a write over the cap: %d %s", st, body)
	}
	if st, body := w.filesCall(w.owner, "PUT", "/sandboxes/"+id+"/files/src/etc/evil", []byte("x")); st != 422 || !strings.Contains(string(body), "link_refused") {
		t.Fatalf("a write through a link out of /workspace: %d %s", st, body)
	}

	// Suspended: read from the archive, not restored; writes refused.
	w.advance(sandbox.DefaultIdleTimeout)
	if sb := w.sandboxOf(s); sb.State != "suspended" {
		t.Fatalf("not suspended: %s", sb.State)
	}
	l := w.listFiles(w.owner, id, "new/dir")
	if l.Source != "archive" || entryTypes(l)["b.txt"] != "file" {
		t.Fatalf("a suspended sandbox's new/dir: %+v", l)
	}
	if st, body := w.filesCall(w.owner, "GET", "/sandboxes/"+id+"/files/new/dir/b.txt", nil); st != 200 || string(body) != "written\nmore\n" {
		t.Fatalf("read from the archive: %d %q", st, body)
	}
	if st, body := w.filesCall(w.owner, "GET", "/sandboxes/"+id+"/files/src/alink", nil); st != 422 || !strings.Contains(string(body), "not_a_file") {
		t.Fatalf("a link in the archive: %d %s", st, body)
	}
	if st, body := w.filesCall(w.owner, "PUT", "/sandboxes/"+id+"/files/late.txt", []byte("x")); st != 409 || !strings.Contains(string(body), "sandbox_not_running") {
		t.Fatalf("a write to a suspended sandbox: %d %s", st, body)
	}
	if sb := w.sandboxOf(s); sb.State != "suspended" {
		t.Fatalf("reading its files woke the sandbox: %s", sb.State)
	}

	// A viewer lists but reads no bytes; every read is on the audit log.
	viewer := longToken(w.person(w.browserOf(), "viewer@example.com", "viewer"))
	w.listFiles(viewer, id, "")
	if st, body := w.filesCall(viewer, "GET", "/sandboxes/"+id+"/files/src/a.txt", nil); st != 403 || !strings.Contains(string(body), "Sandbox.readFile") {
		t.Fatalf("a viewer's read: %d %s", st, body)
	}
	if st, body := w.filesCall(viewer, "PUT", "/sandboxes/"+id+"/files/x", []byte("x")); st != 403 || !strings.Contains(string(body), "Sandbox.writeFile") {
		t.Fatalf("a viewer's write: %d %s", st, body)
	}
}
