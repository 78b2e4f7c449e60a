package web_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A program reads a volume's file by its path, as the bytes its type says
// (a Uint8Array). One larger than code mode takes (4 MiB) throws
// answer_too_large, which it can catch, and the server goes on: the
// router's way of breaking off an answer whose handler fails after it
// began (a panic that cuts the connection) must not unwind through the
// program.
func TestCodeModeReadsFilesAndALargeOneIsAnErrorNotACrash(t *testing.T) {
	f := newFnEnv(t)
	w := f.volumeWorld(f.startVolumes(8<<20, 10, 32<<20), `{}`)
	if st, body := w.put(w.s.Token, "in/a%20b.txt", `small`); st != 200 {
		t.Fatalf("Volume.put in/a b.txt: %d %s", st, body)
	}
	if st, body := w.put(w.s.Token, "big.json", `"`+strings.Repeat("x", 5<<20)+`"`); st != 200 {
		t.Fatalf("Volume.put big.json: %d %s", st, body)
	}
	prog := `const s = "` + w.s.ID + `"
const bytes: Uint8Array = await $.Volume.get({ session: s, path: "in/a b.txt" })
const small = { isBytes: bytes instanceof Uint8Array, text: String.fromCharCode(...bytes) }
let big: any
try {
  const v = await $.Volume.get({ session: s, path: "big.json" })
  big = { read: v.length }
} catch (e: any) {
  big = { code: e.code, message: e.message }
}
return { small, big }`
	for range 2 { // the second run finds the server still there
		_, res := codeClient(t, w.env, w.owner, codeStep{"do", map[string]any{"program": prog}})
		run := decodeProgram(t, res[0])
		var got struct {
			Small struct {
				IsBytes bool
				Text    string
			}
			Big struct{ Code, Message string }
		}
		if err := json.Unmarshal(run.Value, &got); err != nil || !got.Small.IsBytes || got.Small.Text != "small" || got.Big.Code != "answer_too_large" ||
			!strings.Contains(got.Big.Message, "4 MiB") {
			t.Fatalf("the program answered %s (%s); want the small file read as bytes and answer_too_large caught", run.Value, res[0].Text)
		}
	}
}

// A flat token's Volume.get answers a text file as text, and any other
// file whole, as an embedded resource's blob named by its route: as text,
// bytes that are not UTF-8 would come back replaced.
func TestFlatToolsDownloadAFileWhole(t *testing.T) {
	f := newFnEnv(t)
	w := f.volumeWorld(f.startVolumes(8<<20, 10, 32<<20), `{}`)
	binary := "\x00\xff\xfe\x80 not text \xc3"
	for path, body := range map[string]string{"notes/a%20b.txt": "plain words\n", "data.bin": binary} {
		if st, out := w.put(w.s.Token, path, body); st != 200 {
			t.Fatalf("Volume.put %s: %d %s", path, st, out)
		}
	}
	var tok struct{ Token string }
	if st := f.api(w.owner, "POST", "/tokens", map[string]any{"name": "flat", "expires": "1h", "tools": "flat"}, &tok); st != 201 {
		t.Fatalf("Token.create tools flat: %d", st)
	}
	_, res := codeClient(t, w.env, tok.Token,
		codeStep{"Volume.get", map[string]any{"session": w.s.ID, "path": "notes/a b.txt"}},
		codeStep{"Volume.get", map[string]any{"session": w.s.ID, "path": "data.bin"}})
	if res[0].IsError || res[0].Text != "plain words\n" || res[0].Resource != nil {
		t.Errorf("the text file: %+v; want its text", res[0])
	}
	r := res[1].Resource
	if res[1].IsError || r == nil {
		t.Fatalf("the binary file: %+v; want an embedded resource", res[1])
	}
	if string(r.Blob) != binary {
		t.Errorf("the binary file came back as %q; want %q", r.Blob, binary)
	}
	if want := w.srv.URL + "/api/v1/sessions/" + w.s.ID + "/volume/data.bin"; r.URI != want || r.MIMEType == "" {
		t.Errorf("the resource is named %q (%s); want %q and a media type", r.URI, r.MIMEType, want)
	}
}
