package fn

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// anydocOut is the anydoc read tool's answer.
type anydocOut struct {
	Path, Format, Markdown, Text string
	Sections, Read               int
	Truncated                    bool
	Notes                        []string
	Parts                        []struct {
		Kind, Name, Markdown, Text, Notes string
		Index                             int
	}
}

// anydocVolume is a volume holding the committed fixtures
// (runtime/fn/packages/anydoc/testdata, made as its README says).
func anydocVolume(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"report.docx", "budget.xlsx", "deck.pptx", "paper.pdf", "long.pdf"} {
		b, err := os.ReadFile(filepath.Join("packages", "anydoc", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readOnly(dir string) *VolumeMount {
	return &VolumeMount{Dir: dir, MaxFileBytes: 64 << 20, MaxNewBytes: 64 << 20, MaxNewFiles: 100}
}

func anydocRead(t *testing.T, dir string, input map[string]any) (anydocOut, error) {
	t.Helper()
	var out anydocOut
	err := runTool(t, "anydoc", "read", input, CallRequest{Volume: readOnly(dir)}, &out)
	return out, err
}

func wantIn(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestAnydocReadsRealFiles(t *testing.T) {
	dir := anydocVolume(t)

	t.Run("docx", func(t *testing.T) {
		out, err := anydocRead(t, dir, map[string]any{"path": "/volume/report.docx"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Format != "docx" || out.Sections != 1 || out.Truncated {
			t.Fatalf("format %s, sections %d, truncated %v", out.Format, out.Sections, out.Truncated)
		}
		wantIn(t, "markdown", out.Markdown, "# Quarterly Report\n", "## Highlights\n", "### Next steps\n",
			"- New customers in Lisbon\n- Support tickets halved", "1. Hire two engineers\n2. Open the Osaka office",
			"| Region | Q1 | Q2 |\n| --- | --- | --- |\n| Europe | 120 | 150 |\n| Asia | 80 | 110 |", "Prices | in EUR.")
		wantIn(t, "text", out.Text, "Quarterly Report\n", "Region\tQ1\tQ2\nEurope\t120\t150")
	})

	t.Run("xlsx", func(t *testing.T) {
		out, err := anydocRead(t, dir, map[string]any{"path": "budget.xlsx"}) // relative: inside /volume
		if err != nil {
			t.Fatal(err)
		}
		if out.Format != "xlsx" || len(out.Parts) != 2 || out.Parts[0].Name != "Costs" || out.Parts[1].Name != "People" {
			t.Fatalf("format %s, parts %+v", out.Format, out.Parts)
		}
		wantIn(t, "sheet Costs", out.Parts[0].Markdown, "## Costs\n\n| Item | Amount | Paid |", "| Laptops | 2400 | TRUE |", "| Rent | 1200.5 | FALSE |", "| Total | 3600.5 |")
		wantIn(t, "sheet People", out.Parts[1].Markdown, "| Name | Team |", "| Kenji | Sales |")
	})

	t.Run("pptx", func(t *testing.T) {
		out, err := anydocRead(t, dir, map[string]any{"path": "/volume/deck.pptx"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Format != "pptx" || len(out.Parts) != 3 {
			t.Fatalf("format %s, %d parts", out.Format, len(out.Parts))
		}
		names := []string{out.Parts[0].Name, out.Parts[1].Name, out.Parts[2].Name}
		if strings.Join(names, ",") != "Launch Plan,Goals,Budget" {
			t.Fatalf("slide titles %v", names)
		}
		wantIn(t, "slide 1", out.Parts[0].Markdown, "## Slide: Launch Plan", "Spring 2027")
		wantIn(t, "slide 2", out.Parts[1].Markdown, "- Ship the beta\n  - Ten design partners\n- Hire support", "> **Notes:** Mention the waiting list.")
		if out.Parts[1].Notes != "Mention the waiting list." {
			t.Errorf("notes %q", out.Parts[1].Notes)
		}
		wantIn(t, "slide 3", out.Parts[2].Markdown, "| Item | Cost |\n| --- | --- |\n| Ads | 4000 |")
	})

	t.Run("pdf", func(t *testing.T) {
		out, err := anydocRead(t, dir, map[string]any{"path": "/volume/paper.pdf"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Format != "pdf" || out.Sections != 2 || len(out.Parts) != 2 || out.Parts[1].Kind != "page" || out.Parts[1].Index != 2 {
			t.Fatalf("format %s, sections %d, parts %+v", out.Format, out.Sections, out.Parts)
		}
		wantIn(t, "page 1", out.Parts[0].Markdown, "## Page 1\n\n### Measuring Tool Latency\n\nWe call each tool a thousand times.")
		wantIn(t, "page 2", out.Parts[1].Text, "Results\nCold starts dominate the first call.\nWarm calls stay under fifteen milliseconds.")
	})

	t.Run("the call lists what it read", func(t *testing.T) {
		var out anydocOut
		e := sharedEngine(t)
		p := load(t, e, "packages", "anydoc")
		res, err := e.Call(t.Context(), p, CallRequest{Tool: "read", Input: []byte(`{"path":"/volume/paper.pdf"}`), Volume: readOnly(dir)})
		if err != nil {
			t.Fatal(err)
		}
		_ = out
		if len(res.Volume) != 1 || res.Volume[0] != (VolumeAccess{Path: "paper.pdf", Op: VolumeRead}) {
			t.Fatalf("accesses %+v", res.Volume)
		}
	})
}

func TestAnydocLimits(t *testing.T) {
	dir := anydocVolume(t)
	out, err := anydocRead(t, dir, map[string]any{"path": "long.pdf", "max_sections": 3})
	if err != nil {
		t.Fatal(err)
	}
	if out.Sections != 30 || out.Read != 3 || !out.Truncated || len(out.Parts) != 3 || !strings.Contains(strings.Join(out.Notes, " "), "read 3 of 30 sections") {
		t.Fatalf("max_sections 3: sections %d read %d truncated %v notes %v", out.Sections, out.Read, out.Truncated, out.Notes)
	}
	out, err = anydocRead(t, dir, map[string]any{"path": "long.pdf", "max_chars": 100})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Truncated || len([]rune(out.Markdown)) > 100 || len([]rune(out.Text)) > 100 {
		t.Fatalf("max_chars 100: truncated %v, %d/%d characters", out.Truncated, len(out.Markdown), len(out.Text))
	}

	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("plain"), 0o644)
	big, _ := os.Create(filepath.Join(dir, "big.pdf"))
	big.WriteString("%PDF-1.4\n")
	big.Truncate(21 << 20)
	big.Close()
	for _, c := range []struct {
		input map[string]any
		want  string
	}{
		{map[string]any{"path": "long.pdf", "max_sections": 5000}, "/properties/max_sections: maximum: 5000/1 is greater than 1000"},
		{map[string]any{"path": "long.pdf", "max_chars": 2000000}, "/properties/max_chars: maximum: 2000000/1 is greater than 1000000"},
		{map[string]any{"path": ""}, "path: required"},
		{map[string]any{"path": "/etc/passwd"}, "is not a file under /volume"},
		{map[string]any{"path": "/volume/../etc/passwd"}, "is not a file under /volume"},
		{map[string]any{"path": "missing.docx"}, "path: /volume/missing.docx does not exist"},
		{map[string]any{"path": "notes.txt"}, "is not a .docx, .xlsx, .pptx or PDF file"},
		{map[string]any{"path": "big.pdf"}, "more than the 20 MiB limit"},
		{map[string]any{"path": "x.pdf", "pages": 2}, `unexpected additional properties ["pages"]`},
	} {
		_, err := anydocRead(t, dir, c.input)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a tool error saying %q", c.input, err, c.want)
		}
	}

	// Without a volume grant the function sees no /volume.
	var o anydocOut
	err = runTool(t, "anydoc", "read", map[string]any{"path": "paper.pdf"}, CallRequest{}, &o)
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "path: this function has no volume grant") {
		t.Fatalf("without a grant: %v", err)
	}
}

// zipOf packs name → content into a zip, deflated.
func zipOf(t testing.TB, parts map[string][]byte) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, body := range parts {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
	}
	z.Close()
	return b.Bytes()
}

func TestAnydocHostileFiles(t *testing.T) {
	dir := t.TempDir()
	const docStart = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`
	bomb := append([]byte(docStart), bytes.Repeat([]byte(" "), 300<<20)...) // 300 MiB of blanks, ~300 KiB packed
	dense := append([]byte(docStart), bytes.Repeat([]byte(" "), 30<<20)...) // 30 MiB, within the declared limits, 1000:1
	deep := []byte(docStart + strings.Repeat("<w:p>", 1000) + strings.Repeat("</w:p>", 1000) + "</w:body></w:document>")
	files := map[string][]byte{
		"bomb.docx":     zipOf(t, map[string][]byte{"word/document.xml": bomb}),
		"dense.docx":    zipOf(t, map[string][]byte{"word/document.xml": dense}),
		"deep.docx":     zipOf(t, map[string][]byte{"word/document.xml": deep}),
		"deep.pptx":     zipOf(t, map[string][]byte{"ppt/presentation.xml": deep}),
		"bomb.xlsx":     zipOf(t, map[string][]byte{"[Content_Types].xml": []byte("<Types/>"), "xl/workbook.xml": bomb}),
		"notzip.docx":   []byte("PK\x03\x04 this is not a zip"),
		"broken.xml":    nil,
		"garbage.pdf":   []byte("%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 1 0 R >> endobj\nthis is not a PDF at all\n%%EOF"),
		"loop.pdf":      loopPDF(),
		"truncated.pdf": nil,
	}
	paper, _ := os.ReadFile(filepath.Join("packages", "anydoc", "testdata", "paper.pdf"))
	files["truncated.pdf"] = paper[:len(paper)/2]
	files["broken.docx"] = zipOf(t, map[string][]byte{"word/document.xml": []byte(docStart + "<w:p><w:t>unclosed")})
	delete(files, "broken.xml")
	for name, b := range files {
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	for name, want := range map[string]string{
		"bomb.docx":     "more than the 256 MiB limit: refused as a zip bomb",
		"dense.docx":    "word/document.xml unpacks past the limit",
		"deep.docx":     "nests XML elements more than 256 deep",
		"deep.pptx":     "nests XML elements more than 256 deep",
		"bomb.xlsx":     "path:",
		"notzip.docx":   "not a readable zip archive",
		"broken.docx":   "word/document.xml is not well-formed XML",
		"garbage.pdf":   "path:",
		"loop.pdf":      "path:",
		"truncated.pdf": "path:",
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := anydocRead(t, dir, map[string]any{"path": name})
			if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v, want a tool error saying %q", err, want)
			}
			if strings.Contains(err.Error(), "goroutine ") {
				t.Fatalf("a Go stack trace instead of an error: %v", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("took %v", d)
			}
			t.Logf("%s: %v (%v)", name, err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// loopPDF is a PDF whose page tree is its own child.
func loopPDF() []byte {
	body := "%PDF-1.4\n"
	off1 := len(body)
	body += "1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
	off2 := len(body)
	body += "2 0 obj\n<< /Type /Pages /Kids [2 0 R] /Count 1 >>\nendobj\n"
	xref := len(body)
	body += fmt.Sprintf("xref\n0 3\n0000000000 65535 f \n%010d 00000 n \n%010d 00000 n \n", off1, off2)
	body += fmt.Sprintf("trailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return []byte(body)
}
