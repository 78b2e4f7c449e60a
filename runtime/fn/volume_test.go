package fn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type volumeResult struct {
	Op    string   `json:"op"`
	Path  string   `json:"path"`
	OK    bool     `json:"ok"`
	Text  string   `json:"text"`
	Files []string `json:"files"`
	Error string   `json:"error"`
}

func volumeCall(t *testing.T, m *VolumeMount, ops string) ([]volumeResult, CallResult) {
	t.Helper()
	e := sharedEngine(t)
	p := load(t, e, "testdata", "volumefiles")
	res, err := e.Call(t.Context(), p, CallRequest{Tool: "files", Input: json.RawMessage(`{"ops":` + ops + `}`), Volume: m})
	if err != nil {
		t.Fatalf("call: %v (stderr %s)", err, res.Stderr)
	}
	var out struct{ Results []volumeResult }
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	return out.Results, res
}

func TestVolumeMountByGrant(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "in"), 0o755)
	os.WriteFile(filepath.Join(dir, "in", "data.csv"), []byte("a,b\n1,2\n"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("host secret"), 0o644)

	// No mount: the guest sees no /volume at all.
	rs, _ := volumeCall(t, nil, `[{"op":"read","path":"/volume/in/data.csv"},{"op":"list","path":"/volume"}]`)
	if rs[0].OK || rs[1].OK {
		t.Fatalf("without a grant the call reached /volume: %+v", rs)
	}

	// Read: reads, cannot write, delete, link or climb out.
	ro := &VolumeMount{Dir: dir, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10}
	rs, res := volumeCall(t, ro, `[{"op":"read","path":"/volume/in/data.csv"},{"op":"write","path":"/volume/out.txt","text":"x"},
		{"op":"delete","path":"/volume/in/data.csv"},{"op":"read","path":"/volume/../`+strings.TrimPrefix(secret, "/")+`"},
		{"op":"list","path":"/volume"}]`)
	if !rs[0].OK || rs[0].Text != "a,b\n1,2\n" {
		t.Fatalf("read grant could not read: %+v", rs[0])
	}
	if rs[1].OK || rs[2].OK || rs[3].OK || !strings.Contains(rs[1].Error, "Permission denied") {
		t.Fatalf("read grant wrote, deleted or climbed out: %+v", rs[1:4])
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Fatal("a read-only call left out.txt in the volume")
	}
	if len(rs[4].Files) != 1 || rs[4].Files[0] != "/volume/in/data.csv" {
		t.Fatalf("list = %v", rs[4].Files)
	}
	if len(res.Volume) != 1 || res.Volume[0] != (VolumeAccess{Path: "in/data.csv", Op: VolumeRead}) {
		t.Fatalf("accesses = %+v, want the one read", res.Volume)
	}

	// Write: writes, deletes, renames; links refused; names checked; limits hold.
	rw := &VolumeMount{Dir: dir, Write: true, MaxFileBytes: 1000, MaxNewBytes: 1500, MaxNewFiles: 3}
	rs, res = volumeCall(t, rw, `[{"op":"mkdir","path":"/volume/out"},{"op":"write","path":"/volume/out/summary.txt","text":"rows: 1"},
		{"op":"symlink","path":"/volume/link","to":"`+secret+`"},{"op":"write","path":"/volume/bad\\name","text":"x"},
		{"op":"write","path":"/volume/big.bin","bytes":1001},{"op":"write","path":"/volume/a.bin","bytes":900},
		{"op":"append","path":"/volume/a.bin","bytes":700},{"op":"rename","path":"/volume/out/summary.txt","to":"/volume/summary.txt"},
		{"op":"delete","path":"/volume/in/data.csv"}]`)
	want := []bool{true, true, false, false, false, true, false, true, true}
	for i, w := range want {
		if rs[i].OK != w {
			t.Errorf("op %d %s %s: ok=%v want %v (%s)", i, rs[i].Op, rs[i].Path, rs[i].OK, w, rs[i].Error)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "summary.txt")); string(b) != "rows: 1" {
		t.Fatalf("summary.txt = %q", b)
	}
	if st, err := os.Stat(filepath.Join(dir, "a.bin")); err != nil || st.Size() != 900 {
		t.Fatalf("a.bin after an append past the volume's room: %v %v (want 900 bytes, the write undone)", st, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "link")); err == nil {
		t.Fatal("the guest made a link in the volume")
	}
	got := map[VolumeAccess]bool{}
	for _, a := range res.Volume {
		got[a] = true
	}
	for _, a := range []VolumeAccess{{"out/summary.txt", VolumeWrite}, {"summary.txt", VolumeWrite}, {"out/summary.txt", VolumeDelete},
		{"a.bin", VolumeWrite}, {"in/data.csv", VolumeDelete}} {
		if !got[a] {
			t.Errorf("accesses lack %+v: %+v", a, res.Volume)
		}
	}
}

// A link put in the volume by other means (a person on the host) leads no
// call out of it, as the file or as a folder on the way.
func TestVolumeLinksPlacedOnTheHostAreNotFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("host secret"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "file-link"))
	os.Symlink(outside, filepath.Join(dir, "dir-link"))
	m := &VolumeMount{Dir: dir, Write: true, MaxFileBytes: 1 << 20, MaxNewBytes: 1 << 20, MaxNewFiles: 10}
	rs, _ := volumeCall(t, m, `[{"op":"read","path":"/volume/file-link"},{"op":"read","path":"/volume/dir-link/secret.txt"},
		{"op":"write","path":"/volume/dir-link/planted.txt","text":"x"},{"op":"delete","path":"/volume/dir-link/secret.txt"},
		{"op":"rename","path":"/volume/dir-link/secret.txt","to":"/volume/stolen.txt"},{"op":"mkdir","path":"/volume/dir-link/made"}]`)
	for _, r := range rs {
		if r.OK || strings.Contains(r.Text, "host secret") {
			t.Errorf("%s %s went through a link: %+v", r.Op, r.Path, r)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Fatal("a call wrote outside the volume through a link")
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "host secret" {
		t.Fatal("a call deleted or moved a file outside the volume through a link")
	}
}
