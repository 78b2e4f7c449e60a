package main

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ledongthuc/pdf"
)

// pdf reads each page's text line by line (rows of the same baseline, left
// to right); a line set in a font clearly larger than the page's body text
// becomes a heading in the Markdown.
func (d *doc) pdf(b []byte) error {
	r, err := pdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("path: not a readable PDF: %v", err)
	}
	// The reader walks the page tree without remembering where it has been:
	// a tree that contains itself would never end.
	visits := 0
	if err := checkPageTree(r.Trailer().Key("Root").Key("Pages"), 0, &visits); err != nil {
		return err
	}
	n := r.NumPage()
	for i := 1; i <= n; i++ {
		if len(d.parts) >= d.limit {
			d.total += n - i + 1
			break
		}
		p := r.Page(i)
		s := section{Kind: "page", Index: i}
		if !p.V.IsNull() {
			lines, err := pageLines(p)
			if err != nil {
				return fmt.Errorf("path: page %d: %v", i, err)
			}
			var md, txt []string
			body := bodySize(lines)
			for _, l := range lines {
				txt = append(txt, l.text)
				if body > 0 && l.size >= body*1.3 && len(l.text) < 200 {
					md = append(md, "### "+l.text)
				} else {
					md = append(md, l.text)
				}
			}
			s.Text = strings.Join(txt, "\n")
			s.Markdown = strings.Join(md, "\n\n")
		}
		s.Markdown = strings.TrimSpace(fmt.Sprintf("## Page %d\n\n%s", i, s.Markdown))
		d.add(s)
	}
	return nil
}

// Bounds on the page tree walked before reading.
const (
	maxTreeDepth  = 64
	maxTreeVisits = 100000
)

func checkPageTree(v pdf.Value, depth int, visits *int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("path: the PDF's page tree is more than %d levels deep (a loop?)", maxTreeDepth)
	}
	if *visits++; *visits > maxTreeVisits {
		return fmt.Errorf("path: the PDF's page tree has more than %d nodes", maxTreeVisits)
	}
	if v.Key("Type").Name() != "Pages" {
		return nil
	}
	kids := v.Key("Kids")
	for i := 0; i < kids.Len(); i++ {
		if err := checkPageTree(kids.Index(i), depth+1, visits); err != nil {
			return err
		}
	}
	return nil
}

type line struct {
	text string
	size float64
}

func pageLines(p pdf.Page) ([]line, error) {
	// Content interprets the whole text state (Td, TD, T*, Tm, the CTM) and
	// gives each glyph's position, size and width.
	glyphs := p.Content().Text
	sort.SliceStable(glyphs, func(i, j int) bool {
		if math.Abs(glyphs[i].Y-glyphs[j].Y) > 1 {
			return glyphs[i].Y > glyphs[j].Y
		}
		return glyphs[i].X < glyphs[j].X
	})
	var out []line
	var sb strings.Builder
	size, y, end := 0.0, math.Inf(1), math.Inf(-1)
	flush := func() {
		if t := strings.Join(strings.Fields(sb.String()), " "); t != "" {
			out = append(out, line{text: t, size: size})
		}
		sb.Reset()
		size, end = 0, math.Inf(-1)
	}
	for _, g := range glyphs {
		if math.Abs(g.Y-y) > math.Max(g.FontSize, 1)*0.5 {
			flush()
			y = g.Y
		}
		if sb.Len() > 0 && g.X-end > math.Max(g.FontSize, 1)*0.15 {
			sb.WriteString(" ")
		}
		sb.WriteString(g.S)
		end = g.X + g.W
		size = math.Max(size, g.FontSize)
	}
	flush()
	return out, nil
}

// bodySize is the font size most of a page's lines are set in.
func bodySize(lines []line) float64 {
	count := map[float64]int{}
	best, bestN := 0.0, 0
	for _, l := range lines {
		count[l.size] += len(l.text)
		if count[l.size] > bestN {
			best, bestN = l.size, count[l.size]
		}
	}
	return best
}
