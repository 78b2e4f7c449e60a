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
