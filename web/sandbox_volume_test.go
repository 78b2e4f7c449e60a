package web_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/sandbox"
	"github.com/subako/subako/runtime/sandbox/local"
	"github.com/subako/subako/runtime/volume"
)

// volumeSandboxConfig grants three sandboxes: one reading the session's
// volume, one writing it, one without it.
const volumeSandboxConfig = `{
  "sandboxes": [
    {"name": "reader", "environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"}, "default_policy": "allow", "volume": "read"},
    {"name": "writer", "environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"}, "default_policy": "allow", "volume": "write"},
    {"name": "plain", "environment": {"type": "platform", "release": "2026"}, "network": {"type": "none"}, "default_policy": "allow"}]
}`

func volumeGet(t *testing.T, w sandboxWorld, s session, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", w.srv.URL+"/api/v1/sessions/"+s.ID+"/volume/"+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestSandboxSeesTheVolumePerItsGrant(t *testing.T) {
	w := newSandboxWorld(t, volumeSandboxConfig, local.Config{})
	// The volumes' folder is t.TempDir (0700, root's): the sandbox reaches
	// it only through the staging bind.
	dir := t.TempDir()
	store, err := volume.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.rt.StartVolumes(t.Context(), runtime.VolumeOptions{Store: store, DiskDir: dir, MaxFileBytes: 1000, MaxFiles: 5,
		MaxTotalBytes: 3000, MinFreeDisk: -1})
	s := w.session()
	req, _ := http.NewRequest("PUT", w.srv.URL+"/api/v1/sessions/"+s.ID+"/volume/in/data.txt", strings.NewReader("from the app\n"))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("Volume.put: %v %v", resp, err)
	}
	run := func(tool, command string) (string, call) {
		t.Helper()
		st, c := w.call(s.Token, s.ID, "sandbox__"+tool+"__exec", map[string]any{"command": command, "timeout_secs": 30}, 60)
		if st != 200 {
			t.Fatalf("exec %q in %s: %d %+v", command, tool, st, c)
		}
		return string(c.Output), c
	}

	// Read: the app's file is there; nothing can be written.
	out, c := run("reader", "cat /volume/in/data.txt; touch /volume/new.txt; echo rc=$?; rm /volume/in/data.txt; echo rc=$?")
	if c.Status != "succeeded" || !strings.Contains(out, "from the app") || strings.Count(out, "rc=1") != 2 ||
		!strings.Contains(out, "Read-only file system") {
		t.Fatalf("read grant: %s %s; want the app's file read and writes refused (read-only)", c.Status, out)
	}

	// Write: a file the API then reads, listed as written by the call.
	out, c = run("writer", "mkdir -p /volume/out && printf 'made in the sandbox' > /volume/out/made.txt && cat /volume/in/data.txt")
	if c.Status != "succeeded" || !strings.Contains(out, "from the app") {
		t.Fatalf("write grant: %s %s %s", c.Status, c.Error, out)
	}
	if st, body := volumeGet(t, w, s, "out/made.txt"); st != 200 || body != "made in the sandbox" {
		t.Fatalf("Volume.get of the sandbox's file: %d %q", st, body)
	}
	var l volumeListing
	if st := w.api(s.Token, "GET", "/sessions/"+s.ID+"/volume", nil, &l); st != 200 || l.Count != 2 || l.Files[1].Path != "out/made.txt" ||
		l.Files[1].ModifiedBy != "call "+c.ID || l.Files[1].Size != 19 {
		t.Fatalf("Volume.list after the sandbox wrote: %d %+v; want out/made.txt by call %s", st, l, c.ID)
	}
	// The exec's call says what it wrote, in ToolCall.get and in the
	// session's list of calls (the session page's "Files").
	type callVolume struct {
		ID     string
		Volume []struct{ Path, Op string }
	}
	wrote := func(k callVolume) bool {
		return k.ID == c.ID && slices.ContainsFunc(k.Volume, func(a struct{ Path, Op string }) bool { return a.Path == "out/made.txt" && a.Op == "write" })
	}
	var got callVolume
	if st := w.api(s.Token, "GET", "/tool_calls/"+c.ID, nil, &got); st != 200 || !wrote(got) {
		t.Fatalf("ToolCall.get of the exec: %d %+v; want out/made.txt written", st, got)
	}
	var calls []callVolume
	if st := w.api(s.Token, "GET", "/sessions/"+s.ID+"/tool_calls", nil, &calls); st != 200 || !slices.ContainsFunc(calls, wrote) {
		t.Fatalf("ToolCall.list: %d %+v; want call %s with out/made.txt written", st, calls, c.ID)
	}

	// A link to /etc/passwd (and to /etc) is removed after the exec, the
	// exec says so, and the API never follows it.
	out, c = run("writer", "ln -s /etc/passwd /volume/pw && ln -s /etc /volume/etc && mkfifo /volume/fifo && ls /volume")
	if c.Status != "failed" || !strings.Contains(c.Error, "links, special files") || !strings.Contains(out, "pw") {
		t.Fatalf("links made in /volume: %s %q %s; want the exec failed naming the links removed", c.Status, c.Error, out)
	}
	for _, p := range []string{"pw", "etc/passwd", "fifo"} {
		if st, body := volumeGet(t, w, s, p); st != 404 || strings.Contains(body, "root:") {
			t.Errorf("Volume.get %s after a link was made: %d %.80q; want 404", p, st, body)
		}
	}
	files, _ := os.ReadDir(filepath.Join(dir, s.ID, "files"))
	for _, f := range files {
		if f.Type()&os.ModeSymlink != 0 || f.Type()&os.ModeNamedPipe != 0 {
			t.Errorf("%s is still in the volume's folder", f.Name())
		}
	}

	// Over the limits: a file over --volume-max-file (1000 bytes) is removed.
	_, c = run("writer", "head -c 2000 /dev/zero > /volume/big.bin")
	if c.Status != "failed" || !strings.Contains(c.Error, "--volume-max-file") {
		t.Fatalf("a 2000-byte file: %s %q; want failed naming --volume-max-file", c.Status, c.Error)
	}
	if st, _ := volumeGet(t, w, s, "big.bin"); st != 404 {
		t.Errorf("the over-limit file is readable: %d", st)
	}
	if _, err := os.Lstat(filepath.Join(dir, s.ID, "files", "big.bin")); err == nil {
		t.Errorf("the over-limit file is still on disk")
	}

	// Over --volume-max-files (5, two held): the files the exec created are
	// removed until the volume fits, and the exec says so.
	_, c = run("writer", "for i in 1 2 3 4 5; do echo $i > /volume/n$i.txt; done")
	if c.Status != "failed" || !strings.Contains(c.Error, "--volume-max-files 5") || !strings.Contains(c.Error, "2 files it wrote were removed") {
		t.Fatalf("5 new files in a volume of 2 with room for 5: %s %q", c.Status, c.Error)
	}
	if st := w.api(s.Token, "GET", "/sessions/"+s.ID+"/volume", nil, &l); st != 200 || l.Count != 5 {
		t.Fatalf("Volume.list after the over-limit exec: %d %+v; want 5 files", st, l)
	}

	// Suspension archives /workspace only: the volume is the session's.
	// After the restore /volume is bound again, files and all.
	w.advance(sandbox.DefaultIdleTimeout)
	var list []runtime.SandboxView
	w.api(w.owner, "GET", "/sandboxes?session="+s.ID, nil, &list)
	var writer runtime.SandboxView
	for _, sb := range list {
		if sb.Grant == "writer" {
			writer = sb
		}
	}
	if writer.State != "suspended" || writer.Archive == nil {
		t.Fatalf("the writing sandbox after 5 idle minutes: %+v", writer)
	}
	st, _, archived := w.download(w.owner, writer.ID)
	for name := range archived {
		if strings.Contains(name, "made.txt") || strings.Contains(name, "data.txt") {
			t.Errorf("the workspace archive holds the volume's %s", name)
		}
	}
	if st != 200 {
		t.Fatalf("download the archive: %d", st)
	}
	if out, c := run("writer", "cat /volume/out/made.txt"); c.Status != "succeeded" || !strings.Contains(out, "made in the sandbox") {
		t.Fatalf("after the restore: %s %s", c.Status, out)
	}

	// No grant: no /volume at all.
	if out, c := run("plain", "test -e /volume && echo there || echo absent"); c.Status != "succeeded" || !strings.Contains(out, "absent") {
		t.Fatalf("a sandbox without the grant: %s %s", c.Status, out)
	}
}

func TestSandboxGrantVolumeSettingIsCheckedShownAndKeptByTheEditor(t *testing.T) {
	e := newEnv(t)
	browser := e.owner()
	owner := browser.token()
	_, draft := e.agentWithDraft(owner)
	bad := strings.Replace(volumeSandboxConfig, `"volume": "read"`, `"volume": "ro"`, 1)
	st, raw := e.rawAPI(owner, "PUT", "/versions/"+draft.ID+"/config", bad)
	if body := string(raw); st != 422 || !strings.Contains(body, "sandboxes[0].volume") || !strings.Contains(body, "invalid_volume") ||
		!strings.Contains(body, "none, read or write") {
		t.Fatalf("a bad sandbox volume setting: %d %s", st, body)
	}
	if st, body := e.rawAPI(owner, "PUT", "/versions/"+draft.ID+"/config", volumeSandboxConfig); st != 200 {
		t.Fatalf("Version.update: %d %s", st, body)
	}
	// The version page lists it beside the sandbox; the form shows it.
	if _, page := browser.get("/versions/" + draft.ID); !strings.Contains(page, "volume: read") || !strings.Contains(page, "volume: write") {
		t.Fatalf("the version page does not show the sandboxes' volume settings")
	}
	if _, page := browser.get("/versions/" + draft.ID + "/grants/sandbox/reader/edit"); !strings.Contains(page, `value="read" checked`) ||
		!strings.Contains(page, "Session volume, at /volume") {
		t.Fatalf("the sandbox grant form does not show volume read:\n%s", page)
	}
	form := url.Values{"name": {"reader"}, "release": {"2026"}, "network": {"none"}, "default_policy": {"allow"}, "volume": {"write"}}
	if resp, page := browser.post("/versions/"+draft.ID+"/grants/sandbox/reader", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving the grant: %d\n%s", resp.StatusCode, page)
	}
	var v version
	if st := e.api(owner, "GET", "/versions/"+draft.ID, nil, &v); st != 200 || strings.Count(string(v.Config), `"volume":"write"`) != 2 {
		t.Fatalf("after the form: %d %s", st, v.Config)
	}
	form.Set("volume", "none")
	browser.post("/versions/"+draft.ID+"/grants/sandbox/reader", form)
	if e.api(owner, "GET", "/versions/"+draft.ID, nil, &v); strings.Count(string(v.Config), `"volume"`) != 1 {
		t.Fatalf("volume none is written out: %s", v.Config)
	}
}
