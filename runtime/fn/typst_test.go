package fn

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/fn/packages/typst"
)

// These tests run the typst package for real: bwrap, the host's node and
// typst.ts's compiler as `make deps` installs it.

type typstOut struct {
	OK          bool
	Output      string
	Pages       int
	Bytes       int
	Warnings    []string
	Error       string
	Field       string
	Diagnostics []struct{ Message, Path string }
}

func typstPackage(t testing.TB) (*Engine, *Package) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed (apt-get install bubblewrap)")
	}
	modules, err := typst.Modules(".")
	if err != nil {
		t.Skipf("the typst compiler is not installed, so the typst package is not tested: %v", err)
	}
	e := sharedEngine(t)
	m, err := ParseManifest(typst.Manifest(), e.Caps())
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Load(context.Background(), typst.Bundle(modules), m)
	if err != nil {
		t.Fatal(err)
	}
	return e, p
}

func typstCompile(t *testing.T, e *Engine, p *Package, input map[string]any, vol *VolumeMount) (typstOut, CallResult, error) {
	t.Helper()
	in, _ := json.Marshal(input)
	res, err := e.Call(context.Background(), p, CallRequest{Tool: "compile", Input: in, Volume: vol})
	var out typstOut
	if err == nil {
		if jerr := json.Unmarshal(res.Output, &out); jerr != nil {
			t.Fatalf("output %s: %v", res.Output, jerr)
		}
	}
	return out, res, err
}

const typstReport = `#set page(paper: "a5")
#set document(title: "Quarterly Report")
= Quarterly Report

Revenue grew by *20 percent* in #sys.inputs.at("region", default: "nowhere").

#table(columns: 2, [Region], [Revenue], [Europe], [1.2M], [Asia], [0.8M])

#figure(image("pics/chart.png", width: 40%), caption: [Revenue by month])

#pagebreak()
== Next steps
- Hire two engineers
- Open the Osaka office
`

func TestTypstCompilesToPDFInTheVolume(t *testing.T) {
	e, p := typstPackage(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pics"), 0o755); err != nil {
		t.Fatal(err)
	}
	writePNG(t, filepath.Join(dir, "pics", "chart.png"), 160, 90)

	out, res, err := typstCompile(t, e, p, map[string]any{"source": typstReport, "output": "out/report.pdf",
		"inputs": map[string]string{"region": "Lisbon"}}, readWrite(dir))
	if err != nil {
		t.Fatalf("call: %v (stderr %s)", err, res.Stderr)
	}
	if !out.OK || out.Pages != 2 || out.Output != "out/report.pdf" {
		t.Fatalf("answer %+v", out)
	}
	t.Logf("2-page report with a picture and a table: %d bytes in %s", out.Bytes, res.Duration)
	pdf, err := os.ReadFile(filepath.Join(dir, "out", "report.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) || len(pdf) != out.Bytes {
		t.Fatalf("report.pdf: %d bytes starting %q, answer says %d", len(pdf), pdf[:min(len(pdf), 8)], out.Bytes)
	}
	if len(res.Volume) != 1 || res.Volume[0].Path != "out/report.pdf" || res.Volume[0].Op != "write" {
		t.Fatalf("volume accesses %v", res.Volume)
	}

	// anydoc reads the text back, page by page, as whole sentences: Typst's
	// fonts come back with no glyph widths and kerned words ("Re" "v"
	// "enue"), so the reader must keep the content stream's order.
	var doc anydocOut
	if err := runTool(t, "anydoc", "read", map[string]any{"path": "out/report.pdf"}, CallRequest{Volume: readOnly(dir)}, &doc); err != nil {
		t.Fatalf("anydoc: %v", err)
	}
	if doc.Format != "pdf" || doc.Sections != 2 || len(doc.Parts) != 2 {
		t.Fatalf("anydoc: format %s, %d sections", doc.Format, doc.Sections)
	}
	wantIn(t, "anydoc page 1", doc.Parts[0].Text, "Quarterly Report", "Revenue grew by 20 percent in Lisbon.",
		"Region Revenue", "Europe 1.2M", "Asia 0.8M", "Figure 1: Revenue by month")
	wantIn(t, "anydoc page 2", doc.Parts[1].Text, "Next steps", "Hire two engineers", "Open the Osaka office")
	wantIn(t, "anydoc page 1 Markdown", doc.Parts[0].Markdown, "### Quarterly Report\n\nRevenue grew by 20 percent in Lisbon.")
	for i, part := range doc.Parts {
		if strings.ContainsRune(part.Text, '\uFFFD') || strings.ContainsRune(part.Markdown, '\uFFFD') {
			t.Errorf("anydoc page %d has U+FFFD: %q", i+1, part.Text)
		}
	}

	// A .typ file in the volume, including another one.
	if err := os.WriteFile(filepath.Join(dir, "intro.typ"), []byte("Hello from an included file.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.typ"), []byte("= From a file\n#include \"intro.typ\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, res, err = typstCompile(t, e, p, map[string]any{"file": "main.typ", "output": "/volume/main.pdf"}, readWrite(dir))
	if err != nil || !out.OK || out.Pages != 1 {
		t.Fatalf("file: %+v, %v (stderr %s)", out, err, res.Stderr)
	}

	// An existing output is kept unless overwrite is set.
	out, _, err = typstCompile(t, e, p, map[string]any{"source": "x", "output": "main.pdf"}, readWrite(dir))
	if err != nil || out.OK || out.Field != "output" || !strings.Contains(out.Error, "overwrite") {
		t.Fatalf("existing output: %+v, %v", out, err)
	}
	out, _, err = typstCompile(t, e, p, map[string]any{"source": "x", "output": "main.pdf", "overwrite": true}, readWrite(dir))
	if err != nil || !out.OK {
		t.Fatalf("overwrite: %+v, %v", out, err)
	}
}

func TestTypstErrorsComeBackWithLines(t *testing.T) {
	e, p := typstPackage(t)
	dir := t.TempDir()
	out, res, err := typstCompile(t, e, p, map[string]any{"source": "= Title\nfine line\n#undefined_thing\n#image(\"missing.png\")\n", "output": "bad.pdf"}, readWrite(dir))
	if err != nil {
		t.Fatalf("call: %v (stderr %s)", err, res.Stderr)
	}
	if out.OK {
		t.Fatalf("bad markup compiled: %+v", out)
	}
	wantIn(t, "error", out.Error, "Typst compilation failed", "unknown variable: undefined_thing", "__main__.typ:3:")
	if strings.Contains(out.Error, "/volume/") || strings.Contains(out.Error, dir) {
		t.Errorf("the error shows a sandbox or host path: %s", out.Error)
	}
	if len(out.Diagnostics) == 0 || out.Diagnostics[0].Message == "" {
		t.Errorf("diagnostics %+v", out.Diagnostics)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.pdf")); !os.IsNotExist(err) {
		t.Errorf("a failed compile left bad.pdf: %v", err)
	}
	t.Logf("error: %s", out.Error)

	// The unclosed bracket on line 2 of a volume file.
	if err := os.WriteFile(filepath.Join(dir, "broken.typ"), []byte("ok\n#let x = (1, 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = typstCompile(t, e, p, map[string]any{"file": "broken.typ", "output": "b.pdf"}, readWrite(dir))
	if err != nil || out.OK {
		t.Fatalf("broken.typ: %+v, %v", out, err)
	}
	wantIn(t, "error", out.Error, "broken.typ:2:")

	// No network, and no file outside the volume: both are Typst errors.
	for src, want := range map[string]string{
		"#import \"@preview/cetz:0.3.1\": *\nx": "failed to download package",
		"#read(\"../../etc/passwd\")":           "cannot read file outside of project root",
		"#read(\"/etc/passwd\")":                "file not found (searched at etc/passwd)",
	} {
		out, _, err := typstCompile(t, e, p, map[string]any{"source": src, "output": "x.pdf"}, readWrite(dir))
		if err != nil || out.OK {
			t.Fatalf("%s: %+v, %v", src, out, err)
		}
		wantIn(t, "error", out.Error, want)
	}
	// An unknown font is a warning, and the text falls back to another.
	out, _, err = typstCompile(t, e, p, map[string]any{"source": "#set text(font: \"No Such Font\")\nhello", "output": "w.pdf"}, readWrite(dir))
	if err != nil || !out.OK || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "unknown font family: no such font") {
		t.Fatalf("unknown font: %+v, %v", out, err)
	}

	// Inputs the runner refuses, naming the field.
	for _, tt := range []struct {
		input map[string]any
		vol   *VolumeMount
		field string
	}{
		{map[string]any{"source": "x", "output": "../escape.pdf"}, readWrite(dir), "output"},
		{map[string]any{"file": "nope.typ", "output": "n.pdf"}, readWrite(dir), "file"},
		{map[string]any{"source": "x", "output": "x.pdf"}, nil, "volume"},
		{map[string]any{"source": "#lorem(3000)", "output": "big.pdf", "max_pdf_bytes": 1024}, readWrite(dir), "max_pdf_bytes"},
	} {
		out, _, err := typstCompile(t, e, p, tt.input, tt.vol)
		if err != nil || out.OK || out.Field != tt.field {
			t.Errorf("%v: %+v, %v; want field %s", tt.input, out, err, tt.field)
		}
	}
	// A PDF over the volume's file limit is a write error naming output,
	// and nothing is left.
	small := &VolumeMount{Dir: dir, Write: true, MaxFileBytes: 4096, MaxNewBytes: 1 << 20, MaxNewFiles: 10}
	out, _, err = typstCompile(t, e, p, map[string]any{"source": "#lorem(500)", "output": "huge.pdf"}, small)
	if err != nil || out.OK || out.Field != "output" || !strings.Contains(out.Error, "EFBIG") {
		t.Fatalf("over the file limit: %+v, %v", out, err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*huge*")); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
	// The schema refuses what the runner never sees.
	for _, in := range []map[string]any{{"output": "x.pdf"}, {"source": "x", "output": "x.png"}, {"source": strings.Repeat("x", 1<<20+1), "output": "x.pdf"}} {
		if _, _, err := typstCompile(t, e, p, in, readWrite(dir)); err == nil {
			t.Errorf("%.60v: accepted", in)
		}
	}
}

// BenchmarkTypstCompile: the 2-page report through the engine (a fresh
// sandbox, node and the compiler per call) beside the same compile by the
// host's node with no sandbox.
func BenchmarkTypstCompile(b *testing.B) {
	e, p := typstPackage(b)
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pics"), 0o755); err != nil {
		b.Fatal(err)
	}
	writePNG(&testing.T{}, filepath.Join(dir, "pics", "chart.png"), 160, 90)
	in, _ := json.Marshal(map[string]any{"source": typstReport, "output": "r.pdf", "overwrite": true})
	b.Run("call", func(b *testing.B) {
		for b.Loop() {
			res, err := e.Call(context.Background(), p, CallRequest{Tool: "compile", Input: in, Volume: readWrite(dir)})
			if err != nil || !bytes.Contains(res.Output, []byte(`"ok":true`)) {
				b.Fatalf("%s %v", res.Output, err)
			}
		}
	})
	modules, _ := typst.Modules(".")
	script := `const {NodeCompiler} = require(process.argv[1] + "/@myriaddreamin/typst-ts-node-compiler");
const c = NodeCompiler.create({workspace: process.argv[2]});
const r = c.compile({mainFileContent: require("fs").readFileSync(0, "utf8")});
require("fs").writeFileSync(process.argv[2] + "/bare.pdf", c.pdf(r.result));`
	b.Run("bare-node", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("/usr/bin/node", "-e", script, modules, dir)
			cmd.Stdin = strings.NewReader(typstReport)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s %v", out, err)
			}
		}
	})
}

// A bundle's binds are host folders seen read-only below /opt/ only.
func TestNativeBundleBindsChecked(t *testing.T) {
	for _, bd := range []string{
		`{"host": "/usr/lib", "guest": "/etc/x"}`,
		`{"host": "usr/lib", "guest": "/opt/x"}`,
		`{"host": "/usr/lib", "guest": "/opt/../etc"}`,
	} {
		_, err := ParseNativeBundle([]byte(`{"command": ["/bin/true"], "binds": [` + bd + `]}`))
		if err == nil || !strings.Contains(err.Error(), "module.binds[0]") {
			t.Errorf("%s: %v", bd, err)
		}
	}
	b, err := ParseNativeBundle(typst.Bundle("/somewhere/node_modules"))
	if err != nil || len(b.Binds) != 1 || b.Binds[0].Guest != "/opt/subako/typst/node_modules" {
		t.Fatalf("typst's bundle: %+v, %v", b, err)
	}
}
