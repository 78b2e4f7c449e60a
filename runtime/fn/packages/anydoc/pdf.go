package main

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ledongthuc/pdf"
)

// pdf reads each page's text line by line (rows of the same baseline, see
// glyphLines); a line set in a font clearly larger than the page's body text
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
	return glyphLines(p.Content().Text), nil
}

// glyphLines groups glyphs into lines of the same baseline, top to bottom.
// Within a line glyphs are ordered by X only when the reader knows every
// glyph's width; otherwise (Typst's Identity-H fonts come back with width 0,
// so a kerning adjustment moves the rest of a word left of its start) the
// content stream's own order is kept. U+FFFD, which the reader gives for
// bytes it cannot map (one at the end of each of Typst's runs), is dropped.
func glyphLines(glyphs []pdf.Text) []line {
	type row struct {
		y      float64
		glyphs []pdf.Text
	}
	var rows []*row
	for _, g := range glyphs {
		if g.S = strings.ReplaceAll(g.S, "\uFFFD", ""); g.S == "" {
			continue
		}
		tol := math.Max(g.FontSize, 1) * 0.5
		var r *row
		for i := len(rows) - 1; i >= 0; i-- {
			if math.Abs(rows[i].y-g.Y) <= tol {
				r = rows[i]
				break
			}
		}
		if r == nil {
			r = &row{y: g.Y}
			rows = append(rows, r)
		}
		r.glyphs = append(r.glyphs, g)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].y > rows[j].y })
	var out []line
	for _, r := range rows {
		widths := true
		for _, g := range r.glyphs {
			if g.W <= 0 && strings.TrimSpace(g.S) != "" {
				widths = false
				break
			}
		}
		if widths {
			sort.SliceStable(r.glyphs, func(i, j int) bool { return r.glyphs[i].X < r.glyphs[j].X })
		}
		var sb strings.Builder
		size, end, prevX := 0.0, math.Inf(-1), math.Inf(-1)
		for _, g := range r.glyphs {
			em := math.Max(g.FontSize, 1)
			if g.W <= 0 && math.Abs(g.X-prevX) < em*0.3 {
				// The same run with no known advance: estimate half an em
				// per glyph for where it ends.
				end += em * 0.5
			} else {
				if sb.Len() > 0 && g.X-end > em*0.15 {
					sb.WriteString(" ")
				}
				end = g.X + g.W
				if g.W <= 0 {
					end += em * 0.5
				}
			}
			sb.WriteString(g.S)
			prevX = g.X
			size = math.Max(size, g.FontSize)
		}
		if t := strings.Join(strings.Fields(sb.String()), " "); t != "" {
			out = append(out, line{text: t, size: size})
		}
	}
	return out
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
