package fn

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		for y := 0; y < h; y++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readWrite(dir string) *VolumeMount {
	return &VolumeMount{Dir: dir, Write: true, MaxFileBytes: 16 << 20, MaxNewBytes: 32 << 20, MaxNewFiles: 20}
}

var testOutline = map[string]any{
	"path":     "/volume/out/deck.pptx",
	"title":    "Quarterly Review",
	"subtitle": "Q3 2027 & beyond <draft>",
	"slides": []any{
		map[string]any{"title": "Wins", "bullets": []any{"Revenue up 20%", map[string]any{"text": "Europe led", "level": 1}, "Churn down"},
			"notes": "Thank the sales team.\nKeep it short."},
		map[string]any{"title": "Numbers", "table": [][]string{{"Region", "Revenue"}, {"Europe", "1.2M"}, {"Asia", "0.8M"}},
			"bullets": []any{"Both regions grew"}},
		map[string]any{"title": "Chart", "image": map[string]any{"path": "/volume/chart.png", "description": "Revenue by month"}},
	},
}

func TestPptxBuildsADeckAnydocReadsBack(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, filepath.Join(dir, "chart.png"), 160, 90)

	var built struct {
		Path          string
		Slides, Bytes int
	}
	if err := runTool(t, "pptx", "build", testOutline, CallRequest{Volume: readWrite(dir)}, &built); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "out", "deck.pptx")
	st, err := os.Stat(file)
	if err != nil || built.Path != "/volume/out/deck.pptx" || built.Slides != 4 || int64(built.Bytes) != st.Size() {
		t.Fatalf("built %+v, file %v %v", built, st, err)
	}
	// The picture went in as it was, beside a complete package.
	z, err := zip.OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range z.File {
		names[f.Name] = true
	}
	z.Close()
	for _, n := range []string{"[Content_Types].xml", "ppt/presentation.xml", "ppt/slides/slide4.xml", "ppt/media/image4.png", "ppt/notesSlides/notesSlide2.xml", "ppt/theme/theme1.xml"} {
		if !names[n] {
			t.Errorf("the deck lacks %s", n)
		}
	}

	out, err := anydocRead(t, dir, map[string]any{"path": "/volume/out/deck.pptx"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Format != "pptx" || len(out.Parts) != 4 {
		t.Fatalf("anydoc read %s with %d parts", out.Format, len(out.Parts))
	}
	titles := []string{}
	for _, p := range out.Parts {
		titles = append(titles, p.Name)
	}
	if strings.Join(titles, "|") != "Quarterly Review|Wins|Numbers|Chart" {
		t.Fatalf("titles %v", titles)
	}
	wantIn(t, "title slide", out.Parts[0].Markdown, "Q3 2027 & beyond <draft>")
	wantIn(t, "slide 2", out.Parts[1].Markdown, "- Revenue up 20%\n  - Europe led\n- Churn down")
	if out.Parts[1].Notes != "Thank the sales team.\nKeep it short." {
		t.Errorf("notes %q", out.Parts[1].Notes)
	}
	wantIn(t, "slide 3", out.Parts[2].Markdown, "- Both regions grew", "| Region | Revenue |\n| --- | --- |\n| Europe | 1.2M |\n| Asia | 0.8M |")
	wantIn(t, "slide 4", out.Parts[3].Markdown, "[image: Revenue by month]")

	t.Run("LibreOffice opens it", func(t *testing.T) {
		soffice, err := exec.LookPath("soffice")
		if err != nil {
			if soffice, err = exec.LookPath("libreoffice"); err != nil {
				t.Skip("soffice (LibreOffice) is not installed here: the deck was checked by anydoc only; install libreoffice-impress to convert it to PDF in this test")
			}
		}
		outDir := t.TempDir()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, soffice, "--headless", "-env:UserInstallation=file://"+t.TempDir(), "--convert-to", "pdf", "--outdir", outDir, file)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("soffice: %v\n%s", err, b)
		}
		pdfBytes, err := os.ReadFile(filepath.Join(outDir, "deck.pdf"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "deck.pdf"), pdfBytes, 0o644)
		out, err := anydocRead(t, dir, map[string]any{"path": "deck.pdf"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Sections != 4 {
			t.Fatalf("LibreOffice's PDF has %d pages, want 4", out.Sections)
		}
		wantIn(t, "LibreOffice's PDF", out.Text, "Quarterly Review", "Revenue up 20%", "Europe led", "1.2M")
	})
}

func TestPptxRefusesBadOutlines(t *testing.T) {
	dir := t.TempDir()
	writePNG(t, filepath.Join(dir, "chart.png"), 16, 9)
	os.WriteFile(filepath.Join(dir, "fake.png"), []byte("not a picture"), 0o644)
	os.WriteFile(filepath.Join(dir, "old.pptx"), []byte("old"), 0o644)
	many := make([]any, 101)
	for i := range many {
		many[i] = "b"
	}
	slide := func(s map[string]any) map[string]any {
		return map[string]any{"path": "new.pptx", "slides": []any{s}}
	}
	for _, c := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"too many bullets", slide(map[string]any{"bullets": many}), "bullets: maxItems: array length 101 is greater than 100"},
		{"level", slide(map[string]any{"bullets": []any{map[string]any{"text": "x", "level": 9}}}), "level"},
		{"long bullet", slide(map[string]any{"bullets": []any{strings.Repeat("x", 4001)}}), "maxLength"},
		{"missing picture", slide(map[string]any{"image": map[string]any{"path": "nope.png"}}), "slides[0].image.path: /volume/nope.png does not exist"},
		{"not a picture", slide(map[string]any{"image": map[string]any{"path": "fake.png"}}), "slides[0].image.path: /volume/fake.png is not a PNG, JPEG or GIF picture"},
		{"climbing out", slide(map[string]any{"image": map[string]any{"path": "/volume/../etc/passwd"}}), "slides[0].image.path: \"/volume/../etc/passwd\" climbs out with .."},
		{"not .pptx", map[string]any{"path": "deck.ppt", "title": "x"}, `path: "deck.ppt" must end in .pptx`},
		{"exists", map[string]any{"path": "old.pptx", "title": "x"}, "path: /volume/old.pptx exists; set overwrite to replace it"},
		{"empty", map[string]any{"path": "new.pptx"}, "slides: empty, and no title"},
		{"header row", slide(map[string]any{"table": [][]string{{}}}), "slides[0].table[0]: the header row has no cells"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out map[string]any
			err := runTool(t, "pptx", "build", c.input, CallRequest{Volume: readWrite(dir)}, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "new.pptx")); err == nil {
		t.Fatal("a refused outline left new.pptx")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "old.pptx")); string(b) != "old" {
		t.Fatal("old.pptx was replaced without overwrite")
	}

	// A read-only grant cannot write the deck, and leaves nothing behind.
	var out map[string]any
	err := runTool(t, "pptx", "build", map[string]any{"path": "ro.pptx", "title": "x"}, CallRequest{Volume: readOnly(dir)}, &out)
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "a volume grant of write is needed") {
		t.Fatalf("read-only grant: %v", err)
	}
	// A volume too small for the deck: the write fails, nothing is left.
	small := &VolumeMount{Dir: dir, Write: true, MaxFileBytes: 2000, MaxNewBytes: 2000, MaxNewFiles: 5}
	err = runTool(t, "pptx", "build", map[string]any{"path": "small.pptx", "title": "x"}, CallRequest{Volume: small}, &out)
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "path: write /volume/small.pptx") {
		t.Fatalf("small volume: %v", err)
	}
	for _, n := range []string{"ro.pptx", "small.pptx", "small.pptx.partial", "ro.pptx.partial"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s was left in the volume", n)
		}
	}
	// overwrite replaces.
	if err := runTool(t, "pptx", "build", map[string]any{"path": "old.pptx", "title": "New", "overwrite": true}, CallRequest{Volume: readWrite(dir)}, &out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "old.pptx")); !bytes.HasPrefix(b, []byte("PK")) {
		t.Fatal("overwrite did not replace old.pptx")
	}
}
