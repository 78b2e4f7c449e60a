package web_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/packages/typst"
)

// The typst package end to end: installed by the server, granted with
// volume "write", compiling a .typ file the app uploaded (which includes
// another) into a PDF the app downloads, listed on the call. SQLite and
// PostgreSQL.
func TestTypstFunctionThroughASession(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	modules, err := typst.Modules(".")
	if err != nil {
		t.Skipf("the typst compiler is not installed (make deps): %v", err)
	}
	f := newFnEnv(t)
	f.engine.SetNative(fn.NativeConfig{})
	dir := f.startVolumes(1<<20, 50, 4<<20)
	if _, installed, err := f.rt.EnsureFunction(context.Background(), runtime.FunctionInstallInput{Manifest: typst.Manifest(), Wasm: typst.Bundle(modules)}); err != nil || !installed {
		t.Fatalf("EnsureFunction typst: %v %v", installed, err)
	}
	w := f.volumeWorld(dir, `{"functions": [{"name": "doc", "package": "typst", "version": "1.0.0", "volume": "write", "default_policy": "allow"}]}`)
	for path, body := range map[string]string{
		"paper/main.typ":  "#set page(paper: \"a6\")\n= Field Notes\n#include \"body.typ\"\n",
		"paper/body.typ":  "Seen in #sys.inputs.place: #read(\"birds.txt\")\n",
		"paper/birds.txt": "three herons",
	} {
		if st, b := w.put(w.s.Token, path, body); st != 200 {
			t.Fatalf("upload %s: %d %s", path, st, b)
		}
	}
	var c volumeCall
	st := w.api(w.s.Token, "POST", "/sessions/"+w.s.ID+"/tool_calls", map[string]any{"tool": "fn__doc__compile",
		"input":        map[string]any{"file": "paper/main.typ", "output": "paper/main.pdf", "inputs": map[string]string{"place": "Kyoto"}},
		"wait_seconds": 60}, &c)
	if st != 200 || c.Status != "succeeded" {
		t.Fatalf("fn__doc__compile: %d %+v", st, c)
	}
	var out struct {
		OK           bool
		Pages, Bytes int
		Error        string
	}
	json.Unmarshal(c.Output, &out)
	if !out.OK || out.Pages != 1 {
		t.Fatalf("output %s", c.Output)
	}
	st, pdf := w.raw(w.s.Token, "GET", "/sessions/"+w.s.ID+"/volume/paper/main.pdf", nil, "")
	if st != 200 || !strings.HasPrefix(pdf, "%PDF-") || len(pdf) != out.Bytes {
		t.Fatalf("the PDF through the API: %d, %d bytes (answer %d)", st, len(pdf), out.Bytes)
	}
	var got volumeCall
	if st := w.api(w.s.Token, "GET", "/tool_calls/"+c.ID, nil, &got); st != 200 {
		t.Fatalf("ToolCall.get: %d", st)
	}
	if len(got.Volume) != 1 || got.Volume[0].Path != "paper/main.pdf" || got.Volume[0].Op != "write" {
		t.Fatalf("the call's volume list: %+v", got.Volume)
	}

	// A Typst error is the tool's answer, with its line.
	if st, b := w.put(w.s.Token, "paper/broken.typ", "fine\n#let x = (1,\n"); st != 200 {
		t.Fatalf("upload: %d %s", st, b)
	}
	st = w.api(w.s.Token, "POST", "/sessions/"+w.s.ID+"/tool_calls", map[string]any{"tool": "fn__doc__compile",
		"input": map[string]any{"file": "paper/broken.typ", "output": "paper/broken.pdf"}, "wait_seconds": 60}, &c)
	json.Unmarshal(c.Output, &out)
	if st != 200 || c.Status != "succeeded" || out.OK || !strings.Contains(out.Error, "paper/broken.typ:2:") {
		t.Fatalf("broken.typ: %d %s %s", st, c.Status, c.Output)
	}
}
