package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/volume"
)

// volumeWorld is a server with volumes (small limits: 1000 bytes a file, 5
// files, 3000 bytes in all), the volumefiles test module granted three
// times (no volume, read, write) and a session.
type volumeWorld struct {
	*fnEnv
	dir     string
	agent   string
	version string
	s       session
}

func newVolumeWorld(t *testing.T) *volumeWorld {
	t.Helper()
	f := newFnEnv(t)
	dir := f.startVolumes(1000, 5, 3000)
	wasm, manifest := f.mods.TestModule(t, "volumefiles")
	if st := f.api(f.owner, "POST", "/functions", installJSON(wasm, manifest), nil); st != 201 {
		t.Fatalf("Function.install volumefiles: %d", st)
	}
	return f.volumeWorld(dir, `{"functions": [
	  {"name": "none", "package": "volumefiles", "version": "1.0.0", "default_policy": "allow"},
	  {"name": "reader", "package": "volumefiles", "version": "1.0.0", "volume": "read", "default_policy": "allow"},
	  {"name": "writer", "package": "volumefiles", "version": "1.0.0", "volume": "write", "default_policy": "allow"}]}`)
}

// startVolumes gives f's runtime a volume store in a folder of the test's
// own, with these limits per session, and returns the folder.
func (f *fnEnv) startVolumes(maxFileBytes int64, maxFiles int, maxTotalBytes int64) string {
	f.t.Helper()
	dir := f.t.TempDir()
	store, err := volume.NewLocal(dir)
	if err != nil {
		f.t.Fatal(err)
	}
	f.rt.StartVolumes(f.t.Context(), runtime.VolumeOptions{Store: store, DiskDir: dir, MaxFileBytes: maxFileBytes, MaxFiles: maxFiles,
		MaxTotalBytes: maxTotalBytes, MinFreeDisk: -1})
	return dir
}

// volumeWorld publishes a version of a new agent with this config and opens
// a session of it, on the volumes startVolumes keeps in dir.
func (f *fnEnv) volumeWorld(dir, config string) *volumeWorld {
	f.t.Helper()
	agent, draft := f.agentWithDraft(f.owner)
	if st, body := f.rawAPI(f.owner, "PUT", "/versions/"+draft.ID+"/config", config); st != 200 {
		f.t.Fatalf("Version.update: %d %s", st, body)
	}
	if st := f.api(f.owner, "POST", "/versions/"+draft.ID+"/publish", nil, nil); st != 200 {
		f.t.Fatalf("publish: %d", st)
	}
	w := &volumeWorld{fnEnv: f, dir: dir, agent: agent, version: draft.ID}
	w.s = w.newSession()
	return w
}

func (w *volumeWorld) newSession() session {
	w.t.Helper()
	var s session
	if st := w.api(w.owner, "POST", "/sessions", map[string]any{"version": w.version, "title": "files"}, &s); st != 201 {
		w.t.Fatalf("Session.create: %d", st)
	}
	return s
}

// raw sends a body as is to /api/v1 + path and returns the status and body.
func (w *volumeWorld) raw(token, method, path string, body io.Reader, ctype string) (int, string) {
	w.t.Helper()
	req, _ := http.NewRequest(method, w.srv.URL+"/api/v1"+path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (w *volumeWorld) put(token, path, body string) (int, string) {
	return w.raw(token, "PUT", "/sessions/"+w.s.ID+"/volume/"+path, strings.NewReader(body), "application/octet-stream")
}

type volumeListing struct {
	Files []struct {
		Path, SHA256 string
		Size         int64
		ModifiedBy   string `json:"modified_by"`
	}
	Count      int
	TotalBytes int64 `json:"total_bytes"`
}

func (w *volumeWorld) list() volumeListing {
	w.t.Helper()
	var l volumeListing
	if st := w.api(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume", nil, &l); st != 200 {
		w.t.Fatalf("Volume.list: %d", st)
	}
	return l
}

// onDisk lists the files under the volume store's folder, temporary ones included.
func (w *volumeWorld) onDisk() []string {
	var out []string
	filepath.Walk(w.dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(w.dir, p)
			out = append(out, rel+fmt.Sprintf(":%d", info.Size()))
		}
		return nil
	})
	return out
}

func TestVolumeRoundTripsThroughTheAPI(t *testing.T) {
	w := newVolumeWorld(t)
	tok := w.s.Token
	// A JSON file sent as JSON is a file like any other, not a body to check.
	if st, body := w.raw(tok, "PUT", "/sessions/"+w.s.ID+"/volume/in/data.json", strings.NewReader(`{"a": 1}`), "application/json"); st != 200 ||
		!strings.Contains(body, `"path":"in/data.json"`) || !strings.Contains(body, `"size":8`) {
		t.Fatalf("Volume.put: %d %s", st, body)
	}
	if st, body := w.put(tok, "notes%20one.txt", "hello"); st != 200 || !strings.Contains(body, `"path":"notes one.txt"`) {
		t.Fatalf("Volume.put with an escaped space: %d %s", st, body)
	}
	if st, body := w.raw(tok, "GET", "/sessions/"+w.s.ID+"/volume/notes%20one.txt", nil, ""); st != 200 || body != "hello" {
		t.Fatalf("Volume.get: %d %q", st, body)
	}
	// Replaced whole.
	if st, _ := w.put(tok, "notes%20one.txt", "hello again"); st != 200 {
		t.Fatalf("Volume.put again: %d", st)
	}
	l := w.list()
	if l.Count != 2 || l.TotalBytes != 8+11 || len(l.Files) != 2 || l.Files[0].Path != "in/data.json" || l.Files[1].ModifiedBy == "" ||
		len(l.Files[1].SHA256) != 64 {
		t.Fatalf("Volume.list: %+v", l)
	}
	var in volumeListing
	if st := w.api(tok, "GET", "/sessions/"+w.s.ID+"/volume?prefix=in", nil, &in); st != 200 || len(in.Files) != 1 || in.Files[0].Path != "in/data.json" {
		t.Fatalf("Volume.list under in/: %d %+v", st, in)
	}
	if st, body := w.raw(tok, "GET", "/sessions/"+w.s.ID+"/volume?prefix=..", nil, ""); st != 422 || !strings.Contains(body, `"field":"prefix"`) {
		t.Fatalf("Volume.list with prefix ..: %d %s", st, body)
	}
	// A person with a token reaches the same files.
	if st, body := w.raw(w.owner, "GET", "/sessions/"+w.s.ID+"/volume/in/data.json", nil, ""); st != 200 || body != `{"a": 1}` {
		t.Fatalf("owner Volume.get: %d %q", st, body)
	}
	// Another session's token does not reach this volume.
	other := w.newSession()
	if st, body := w.raw(other.Token, "GET", "/sessions/"+w.s.ID+"/volume/in/data.json", nil, ""); st != 403 || !strings.Contains(body, "another session") {
		t.Fatalf("another session's token: %d %s", st, body)
	}
	if st, _ := w.raw(tok, "DELETE", "/sessions/"+w.s.ID+"/volume/in/data.json", nil, ""); st != 204 {
		t.Fatalf("Volume.delete: %d", st)
	}
	if st, body := w.raw(tok, "GET", "/sessions/"+w.s.ID+"/volume/in/data.json", nil, ""); st != 404 || !strings.Contains(body, "in/data.json") {
		t.Fatalf("Volume.get after delete: %d %s", st, body)
	}
	if st, _ := w.raw(tok, "DELETE", "/sessions/"+w.s.ID+"/volume/in/data.json", nil, ""); st != 404 {
		t.Fatalf("Volume.delete twice: %d", st)
	}
	// Every verb is on the audit log.
	var acts []models.Action
	w.rt.DB().Where("verb LIKE 'Volume.%'").Find(&acts)
	verbs := map[string]int{}
	for _, a := range acts {
		verbs[a.Verb+" "+a.Verdict]++
	}
	if verbs["Volume.put allowed"] != 3 || verbs["Volume.get allowed"] < 2 || verbs["Volume.delete allowed"] != 1 || verbs["Volume.get refused"] != 1 {
		t.Fatalf("actions: %v", verbs)
	}
	// Storage is metered.
	var recs []models.UsageRecord
	w.rt.DB().Where("kind = ? AND session_id = ?", runtime.UsageVolumeBytes, w.s.ID).Order("started_at, ended_at").Find(&recs)
	if len(recs) == 0 || recs[len(recs)-1].Quantity != 11 {
		t.Fatalf("volume usage records: %+v", recs)
	}
	// Once the session has ended its files are kept to read and delete, not written.
	if st := w.api(w.owner, "POST", "/sessions/"+w.s.ID+"/end", nil, nil); st != 200 {
		t.Fatalf("Session.end: %d", st)
	}
	if st, body := w.put(w.owner, "late.txt", "x"); st != 409 || !strings.Contains(body, "session_ended") {
		t.Fatalf("Volume.put after the end: %d %s", st, body)
	}
	if st, body := w.raw(w.owner, "GET", "/sessions/"+w.s.ID+"/volume/notes%20one.txt", nil, ""); st != 200 || body != "hello again" {
		t.Fatalf("Volume.get after the end: %d %q", st, body)
	}
}

func TestVolumeRefusesHostilePathsAndOverLimitFiles(t *testing.T) {
	w := newVolumeWorld(t)
	tok := w.s.Token
	deep := strings.Repeat("d/", 16) + "f"
	for _, c := range []struct{ path, code string }{
		{"..%2F..%2Fetc%2Fpasswd", "path_dot"},
		{"a/%2E%2E/b", "path_dot"},
		{"%2Fetc%2Fpasswd", "path_absolute"},
		{"a%5Cb", "path_backslash"},
		{"a//b", "path_empty_name"},
		{deep, "path_too_deep"},
		{strings.Repeat("n", 256), "name_too_long"},
		{strings.Repeat("n/", 520) + "n", "path_too_long"},
	} {
		st, body := w.put(tok, c.path, "x")
		if st != 400 && st != 422 || !strings.Contains(body, c.code) || !strings.Contains(body, `"field":"path"`) {
			t.Errorf("put %s: %d %s, want %s on field path", c.path, st, body, c.code)
		}
	}
	// A control character is refused before the volume sees it.
	if st, body := w.put(tok, "a%00b", "x"); st < 400 || st >= 500 || !strings.Contains(body, "NUL") || !strings.Contains(body, `"field":"path"`) {
		t.Errorf("put with NUL: %d %s", st, body)
	}
	if len(w.onDisk()) != 0 {
		t.Fatalf("refused paths left files: %v", w.onDisk())
	}
	// Over the file limit: refused, nothing half-written, the old file kept.
	if st, _ := w.put(tok, "keep.txt", "old"); st != 200 {
		t.Fatal("put keep.txt")
	}
	st, body := w.put(tok, "keep.txt", strings.Repeat("x", 1001))
	if st != 400 && st != 422 || !strings.Contains(body, "file_too_large") || !strings.Contains(body, "max_file_bytes 1000") {
		t.Fatalf("over the file limit: %d %s", st, body)
	}
	if _, got := w.raw(tok, "GET", "/sessions/"+w.s.ID+"/volume/keep.txt", nil, ""); got != "old" {
		t.Fatalf("keep.txt after a refused replacement = %q", got)
	}
	// A client that goes away mid-upload leaves the old file too.
	conn, err := net.Dial("tcp", strings.TrimPrefix(w.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /api/v1/sessions/%s/volume/keep.txt HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 500\r\n\r\nnew but cut",
		w.s.ID, strings.TrimPrefix(w.srv.URL, "http://"), tok)
	time.Sleep(200 * time.Millisecond)
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var a models.Action
		if w.rt.DB().Where("verb = 'Volume.put' AND reason LIKE '%upload ended before its end%'").Limit(1).Find(&a); a.ID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cut upload was not recorded as such")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, got := w.raw(tok, "GET", "/sessions/"+w.s.ID+"/volume/keep.txt", nil, ""); got != "old" {
		t.Fatalf("keep.txt after a cut upload = %q", got)
	}
	// Over the total: 3 × 1000 bytes fill 3000 less keep.txt's 3.
	for i := range 2 {
		if st, body := w.put(tok, fmt.Sprintf("f%d", i), strings.Repeat("y", 1000)); st != 200 {
			t.Fatalf("put f%d: %d %s", i, st, body)
		}
	}
	if st, body := w.put(tok, "f2", strings.Repeat("y", 998)); st != 400 && st != 422 || !strings.Contains(body, "volume_full") ||
		!strings.Contains(body, "max_total_bytes 3000") {
		t.Fatalf("over the total: %d %s", st, body)
	}
	// Over the file count: 5 files.
	for i := range 2 {
		if st, _ := w.put(tok, fmt.Sprintf("s%d", i), "z"); st != 200 {
			t.Fatalf("put s%d: %d", i, st)
		}
	}
	if st, body := w.put(tok, "s2", "z"); st != 400 && st != 422 || !strings.Contains(body, "too_many_files") || !strings.Contains(body, "max_files 5") {
		t.Fatalf("over the count: %d %s", st, body)
	}
	// A file where a folder must be, and a folder where a file must be.
	if st, body := w.put(tok, "keep.txt/inner", "x"); st != 409 && st != 400 && st != 422 {
		t.Fatalf("a file as a folder: %d %s", st, body)
	}
	for _, f := range w.onDisk() {
		if strings.Contains(f, "/tmp/") {
			t.Fatalf("a temporary file was left: %v", w.onDisk())
		}
	}
	if l := w.list(); l.Count != 5 || l.TotalBytes != 3+1000+1000+1+1 {
		t.Fatalf("list after refusals: %+v", l)
	}
}

type volumeCall struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Error  string          `json:"error"`
	Output json.RawMessage `json:"output"`
	Volume []struct{ Path, Op string }
}

func (w *volumeWorld) call(tool, ops string) volumeCall {
	w.t.Helper()
	var c volumeCall
	st := w.api(w.s.Token, "POST", "/sessions/"+w.s.ID+"/tool_calls", map[string]any{"tool": tool,
		"input": map[string]any{"ops": json.RawMessage(ops)}, "wait_seconds": 60}, &c)
	if st != 200 || c.Status != "succeeded" {
		w.t.Fatalf("%s: %d %+v", tool, st, c)
	}
	var got volumeCall
	if st := w.api(w.s.Token, "GET", "/tool_calls/"+c.ID, nil, &got); st != 200 {
		w.t.Fatalf("ToolCall.get: %d", st)
	}
	return got
}

func TestFunctionsSeeTheVolumePerTheirGrant(t *testing.T) {
	w := newVolumeWorld(t)
	if st, _ := w.put(w.s.Token, "in/data.csv", "a,b\n1,2\n"); st != 200 {
		t.Fatal("upload data.csv")
	}
	read := `[{"op":"read","path":"/volume/in/data.csv"},{"op":"write","path":"/volume/out.txt","text":"x"}]`
	none := w.call("fn__none__files", read)
	if !strings.Contains(string(none.Output), `"ok":false`) || strings.Contains(string(none.Output), "a,b") || len(none.Volume) != 0 {
		t.Fatalf("no grant: %s %+v", none.Output, none.Volume)
	}
	ro := w.call("fn__reader__files", read)
	if !strings.Contains(string(ro.Output), `"text":"a,b\n1,2\n"`) || !strings.Contains(string(ro.Output), "Permission denied") {
		t.Fatalf("read grant: %s", ro.Output)
	}
	if len(ro.Volume) != 1 || ro.Volume[0].Path != "in/data.csv" || ro.Volume[0].Op != "read" {
		t.Fatalf("read grant's accesses: %+v", ro.Volume)
	}
	rw := w.call("fn__writer__files", `[{"op":"read","path":"/volume/in/data.csv"},{"op":"mkdir","path":"/volume/out"},
		{"op":"write","path":"/volume/out/summary.txt","text":"rows: 1"},{"op":"write","path":"/volume/big","bytes":1001}]`)
	if !strings.Contains(string(rw.Output), `"path":"/volume/out/summary.txt","ok":true`) || !strings.Contains(string(rw.Output), `"path":"/volume/big","ok":false`) {
		t.Fatalf("write grant: %s", rw.Output)
	}
	// What the call wrote is the app's to read, listed as the call's.
	if st, body := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/out/summary.txt", nil, ""); st != 200 || body != "rows: 1" {
		t.Fatalf("the call's file through the API: %d %q", st, body)
	}
	l := w.list()
	found := false
	for _, f := range l.Files {
		if f.Path == "out/summary.txt" && f.ModifiedBy == "call "+rw.ID && f.Size == 7 {
			found = true
		}
		// The guest created big, then its write was refused and undone:
		// the file is there, empty, never part-written.
		if f.Path == "big" && f.Size != 0 {
			t.Fatalf("the over-limit write left bytes: %+v", l)
		}
	}
	if !found {
		t.Fatalf("list lacks the call's file: %+v", l)
	}
	ops := map[string]bool{}
	for _, a := range rw.Volume {
		ops[a.Op+" "+a.Path] = true
	}
	if !ops["read in/data.csv"] || !ops["write out/summary.txt"] {
		t.Fatalf("write grant's accesses: %+v", rw.Volume)
	}
}

func TestFunctionGrantVolumeSettingIsCheckedAndKeptByTheEditor(t *testing.T) {
	w := newVolumeWorld(t)
	var draft version
	if st := w.api(w.owner, "POST", "/agents/"+w.agent+"/versions", map[string]any{}, &draft); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	st, raw := w.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config",
		`{"functions": [{"name": "f", "package": "volumefiles", "version": "1.0.0", "volume": "rw", "default_policy": "allow"}]}`)
	body := string(raw)
	if st != 422 || !strings.Contains(body, "functions[0].volume") || !strings.Contains(body, "invalid_volume") || !strings.Contains(body, "none, read or write") {
		t.Fatalf("a bad volume setting: %d %s", st, body)
	}
	if st, body := w.rawAPI(w.owner, "PUT", "/versions/"+draft.ID+"/config",
		`{"functions": [{"name": "f", "package": "volumefiles", "version": "1.0.0", "volume": "read", "default_policy": "allow"}]}`); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	// The grant form shows the setting and saves what is chosen.
	_, page := w.browser.get("/versions/" + draft.ID + "/grants/fn/f/edit")
	if !strings.Contains(page, `value="read" checked`) {
		t.Fatalf("the grant form does not show volume read:\n%s", page)
	}
	form := url.Values{"name": {"f"}, "package": {"volumefiles@1.0.0"}, "origins": {""}, "default_policy": {"allow"}, "volume": {"write"}}
	if resp, page := w.browser.post("/versions/"+draft.ID+"/grants/fn/f", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving the grant: %d\n%s", resp.StatusCode, page)
	}
	var v version
	if st := w.api(w.owner, "GET", "/versions/"+draft.ID, nil, &v); st != 200 || !strings.Contains(string(v.Config), `"volume":"write"`) {
		t.Fatalf("after the form: %d %s", st, v.Config)
	}
	form.Set("volume", "none")
	w.browser.post("/versions/"+draft.ID+"/grants/fn/f", form)
	if w.api(w.owner, "GET", "/versions/"+draft.ID, nil, &v); strings.Contains(string(v.Config), `"volume"`) {
		t.Fatalf("volume none is written out: %s", v.Config)
	}
}
