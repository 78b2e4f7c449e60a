package fn

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkAnydocVsPdftotext reads the same PDFs with the anydoc package
// through Engine.Call (a fresh wasm instance with the volume mounted, text and
// Markdown out) and with poppler's pdftotext as a host process, in one run:
//
//	go test ./runtime/fn -run '^$' -bench BenchmarkAnydocVsPdftotext -benchtime 20x
func BenchmarkAnydocVsPdftotext(b *testing.B) {
	dir := anydocVolume(b)
	e := sharedEngine(b)
	p := load(b, e, "packages", "anydoc")
	// The fixed cost of a call: the Go runtime and package initialisation in
	// the guest (excelize's among them), then a missing file.
	b.Run("anydoc/start", func(b *testing.B) {
		req := CallRequest{Tool: "read", Input: []byte(`{"path":"/volume/missing.pdf"}`), Volume: readOnly(dir)}
		for b.Loop() {
			if _, err := e.Call(context.Background(), p, req); err == nil {
				b.Fatal("read a missing file")
			}
		}
	})
	for _, name := range []string{"paper.pdf", "long.pdf"} {
		b.Run("anydoc/"+name, func(b *testing.B) {
			input, _ := json.Marshal(map[string]any{"path": "/volume/" + name})
			req := CallRequest{Tool: "read", Input: input, Volume: readOnly(dir)}
			for b.Loop() {
				if _, err := e.Call(context.Background(), p, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("pdftotext/"+name, func(b *testing.B) {
			bin, err := exec.LookPath("pdftotext")
			if err != nil {
				b.Skip("pdftotext (poppler-utils) is not installed")
			}
			for b.Loop() {
				if out, err := exec.Command(bin, filepath.Join(dir, name), "-").Output(); err != nil || len(out) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
