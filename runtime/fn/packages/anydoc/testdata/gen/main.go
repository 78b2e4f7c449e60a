// Command gen makes the anydoc test fixtures other than report.docx (see
// ../README.md):
//
//	go run ./runtime/fn/packages/anydoc/testdata/gen runtime/fn/packages/anydoc/testdata
package main

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/subako/subako/runtime/fn/packages/pptx/deck"
	"github.com/xuri/excelize/v2"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: gen OUTDIR")
	}
	out := os.Args[1]
	must(os.WriteFile(filepath.Join(out, "budget.xlsx"), xlsx(), 0o644))
	d, err := deck.Bytes(deck.Outline{Title: "Launch Plan", Subtitle: "Spring 2027", Slides: []deck.Slide{
		{Title: "Goals", Bullets: []deck.Bullet{{Text: "Ship the beta"}, {Text: "Ten design partners", Level: 1}, {Text: "Hire support"}},
			Notes: "Mention the waiting list."},
		{Title: "Budget", Table: [][]string{{"Item", "Cost"}, {"Ads", "4000"}, {"Events", "2500"}}},
	}})
	must(err)
	must(os.WriteFile(filepath.Join(out, "deck.pptx"), d, 0o644))
	must(os.WriteFile(filepath.Join(out, "paper.pdf"), PDF([][]Line{
		{{20, "Measuring Tool Latency"}, {11, "We call each tool a thousand times."}, {11, "The median call takes eleven milliseconds."}},
		{{20, "Results"}, {11, "Cold starts dominate the first call."}, {11, "Warm calls stay under fifteen milliseconds."}},
	}), 0o644))
	// long.pdf: 30 pages for the benchmark against pdftotext.
	var long [][]Line
	for p := 1; p <= 30; p++ {
		page := []Line{{18, fmt.Sprintf("Section %d", p)}}
		for l := 1; l <= 12; l++ {
			page = append(page, Line{11, fmt.Sprintf("Line %d of page %d: the quick brown fox jumps over the lazy dog.", l, p)})
		}
		long = append(long, page)
	}
	must(os.WriteFile(filepath.Join(out, "long.pdf"), PDF(long), 0o644))
}

func xlsx() []byte {
	f := excelize.NewFile()
	f.SetSheetName("Sheet1", "Costs")
	rows := [][]any{{"Item", "Amount", "Paid"}, {"Laptops", 2400, true}, {"Rent", 1200.5, false}}
	for i, r := range rows {
		must(f.SetSheetRow("Costs", fmt.Sprintf("A%d", i+1), &r))
	}
	must(f.SetCellValue("Costs", "B4", 3600.5)) // the cached value a reader shows
	must(f.SetCellFormula("Costs", "B4", "SUM(B2:B3)"))
	must(f.SetCellValue("Costs", "A4", "Total"))
	_, err := f.NewSheet("People")
	must(err)
	for i, r := range [][]any{{"Name", "Team"}, {"Ana", "Platform"}, {"Kenji", "Sales"}} {
		must(f.SetSheetRow("People", fmt.Sprintf("A%d", i+1), &r))
	}
	var b bytes.Buffer
	must(f.Write(&b))
	return b.Bytes()
}

// Line is one line of text at a font size, in points.
type Line struct {
	Size float64
	Text string
}

// PDF writes a minimal valid PDF 1.4: one page per entry, each line in
// Helvetica (a standard font, not embedded) from the top down, each page's
// content stream compressed (FlateDecode) as most PDFs have it, with a correct
// cross-reference table.
func PDF(pages [][]Line) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, then page and content per page
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, lines := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		var c strings.Builder
		y := 720.0
		for _, l := range lines {
			esc := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`).Replace(l.Text)
			fmt.Fprintf(&c, "BT /F1 %g Tf 72 %g Td (%s) Tj ET\n", l.Size, y, esc)
			y -= l.Size * 1.8
		}
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write([]byte(c.String()))
		w.Close()
		obj(fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
