// Command anydoc is the Subako function package "anydoc": it reads Word (.docx),
// Excel (.xlsx), PowerPoint (.pptx) and PDF files from the session volume
// (/volume) into Markdown and plain text, section by section: the document,
// sheet by sheet, slide by slide, page by page. Spreadsheets are read with
// github.com/xuri/excelize/v2, PDF with github.com/ledongthuc/pdf (pure Go);
// docx and pptx are zip archives of XML read with encoding/xml.
//
// Every input is bounded: the file's size, the archive's entries and unpacked
// bytes, XML nesting, the sections read and the characters returned. A file
// past a limit fails with an error naming the field and the limit.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime/debug"
	"strings"

	"github.com/subako/subako/runtime/fn/guest"
)

// Limits. The function's own memory and deadline bound the rest.
const (
	maxFileBytes     = 20 << 20 // the file read
	maxZipEntries    = 10000    // entries in a docx/xlsx/pptx archive
	maxPartBytes     = 32 << 20 // one unpacked XML part
	maxUnpackedBytes = 64 << 20 // all unpacked parts of one call
	maxZipRatio      = 200      // unpacked:packed of one part (zip bombs)
	maxXMLDepth      = 256      // element nesting in one XML part
	defaultSections  = 200      // pages, sheets or slides read when max_sections is absent
	maxSections      = 1000     // the most max_sections may ask for
	defaultChars     = 200000   // characters of markdown (and of text) when max_chars is absent
	maxChars         = 1000000  // the most max_chars may ask for
	maxSheetRows     = 10000    // rows read per sheet
	maxSheetCols     = 200      // columns read per row
)

type readInput struct {
	Path        string `json:"path"`
	MaxSections int    `json:"max_sections"`
	MaxChars    int    `json:"max_chars"`
}

// section is one page, sheet or slide, or the whole of a Word document.
type section struct {
	Kind     string `json:"kind"` // document, sheet, slide, page
	Index    int    `json:"index"`
	Name     string `json:"name,omitempty"`
	Markdown string `json:"markdown"`
	Text     string `json:"text"`
	Notes    string `json:"notes,omitempty"`
}

type readOutput struct {
	Path      string    `json:"path"`
	Format    string    `json:"format"`
	Sections  int       `json:"sections"`  // sections in the file
	Read      int       `json:"read"`      // sections read
	Markdown  string    `json:"markdown"`  // all sections read, within max_chars
	Text      string    `json:"text"`      // the same as plain text, within max_chars
	Parts     []section `json:"parts"`     // each section read, cut where markdown was cut
	Truncated bool      `json:"truncated"` // sections or characters were left out
	Notes     []string  `json:"notes,omitempty"`
}

// volumePath maps the input path to a file under /volume.
func volumePath(p string) (string, error) {
	if p == "" {
		return "", errors.New("path: required (a file in the session volume, e.g. /volume/report.docx)")
	}
	if !strings.HasPrefix(p, "/") {
		p = "/volume/" + p
	}
	clean := path.Clean(p)
	if clean != "/volume" && !strings.HasPrefix(clean, "/volume/") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return "", fmt.Errorf("path: %q is not a file under /volume", p)
	}
	return clean, nil
}

func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		if _, serr := os.Stat("/volume"); serr != nil {
			return nil, errors.New("path: this function has no volume grant (a grant of read or write mounts /volume)")
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("path: %s does not exist", p)
		}
		return nil, fmt.Errorf("path: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("path: %s is a folder", p)
	}
	if st.Size() > maxFileBytes {
		return nil, fmt.Errorf("path: %s is %d bytes, more than the %d MiB limit on a file anydoc reads", p, st.Size(), maxFileBytes>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("path: %s is more than the %d MiB limit on a file anydoc reads", p, maxFileBytes>>20)
	}
	return b, nil
}

// sniff names the format from the content, falling back to the extension.
func sniff(name string, b []byte) (string, error) {
	ext := strings.ToLower(path.Ext(name))
	switch {
	case len(b) >= 5 && string(b[:5]) == "%PDF-":
		return "pdf", nil
	case len(b) >= 4 && string(b[:4]) == "PK\x03\x04":
		switch ext {
		case ".docx", ".docm", ".dotx":
			return "docx", nil
		case ".xlsx", ".xlsm", ".xltx":
			return "xlsx", nil
		case ".pptx", ".pptm", ".potx":
			return "pptx", nil
		}
		return "zip", nil // decided by the archive's content types
	}
	if ext == ".pdf" {
		return "", errors.New("path: the file ends in .pdf but does not start with %PDF-")
	}
	return "", fmt.Errorf("path: %s is not a .docx, .xlsx, .pptx or PDF file", name)
}

func read(in readInput) (any, error) {
	if in.MaxSections < 0 || in.MaxSections > maxSections {
		return nil, fmt.Errorf("max_sections: %d is outside 1..%d", in.MaxSections, maxSections)
	}
	if in.MaxSections == 0 {
		in.MaxSections = defaultSections
	}
	if in.MaxChars < 0 || in.MaxChars > maxChars {
		return nil, fmt.Errorf("max_chars: %d is outside 1..%d", in.MaxChars, maxChars)
	}
	if in.MaxChars == 0 {
		in.MaxChars = defaultChars
	}
	p, err := volumePath(in.Path)
	if err != nil {
		return nil, err
	}
	b, err := readFile(p)
	if err != nil {
		return nil, err
	}
	format, err := sniff(p, b)
	if err != nil {
		return nil, err
	}
	d := &doc{limit: in.MaxSections}
	if err := d.parse(format, b); err != nil {
		return nil, err
	}
	return d.output(p, in.MaxChars), nil
}

// doc collects the sections of one file.
type doc struct {
	format   string
	limit    int // sections to read
	total    int // sections in the file
	parts    []section
	notes    []string
	unpacked int64
}

func (d *doc) parse(format string, b []byte) (err error) {
	// A parser that panics on a hostile file fails the call with a clear
	// error instead of a Go stack trace.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("path: the %s file is malformed (%v)", d.format, r)
		}
	}()
	if format == "zip" || format == "docx" || format == "pptx" {
		z, err := openZip(b, d)
		if err != nil {
			return err
		}
		if format == "zip" {
			format = z.officeKind()
		}
		d.format = format
		switch format {
		case "docx":
			return d.docx(z)
		case "pptx":
			return d.pptx(z)
		case "xlsx":
			return d.xlsx(b)
		}
		return errors.New("path: a zip archive that is not a Word, Excel or PowerPoint file")
	}
	d.format = format
	if format == "xlsx" {
		if _, err := openZip(b, d); err != nil {
			return err
		}
		return d.xlsx(b)
	}
	return d.pdf(b)
}

func (d *doc) add(s section) bool {
	d.total++
	if len(d.parts) >= d.limit {
		return false
	}
	d.parts = append(d.parts, s)
	return true
}

func (d *doc) output(p string, maxChars int) readOutput {
	out := readOutput{Path: p, Format: d.format, Sections: d.total, Read: len(d.parts), Notes: d.notes, Parts: []section{}}
	out.Truncated = len(d.parts) < d.total
	var md, txt strings.Builder
	mdLeft, txtLeft := maxChars, maxChars
	for _, s := range d.parts {
		m, mcut := cut(s.Markdown+"\n", mdLeft)
		t, tcut := cut(s.Text+"\n", txtLeft)
		mdLeft -= len([]rune(m))
		txtLeft -= len([]rune(t))
		md.WriteString(m)
		txt.WriteString(t)
		s.Markdown, s.Text = strings.TrimSuffix(m, "\n"), strings.TrimSuffix(t, "\n")
		if mcut || tcut {
			out.Truncated = true
		}
		s.Notes, _ = cut(s.Notes, maxChars)
		out.Parts = append(out.Parts, s)
		if mcut {
			break
		}
	}
	out.Markdown, out.Text = strings.TrimRight(md.String(), "\n"), strings.TrimRight(txt.String(), "\n")
	if out.Truncated {
		out.Notes = append(out.Notes, fmt.Sprintf("truncated: read %d of %d sections (max_sections %d) within %d characters (max_chars)", out.Read, out.Sections, d.limit, maxChars))
	}
	return out
}

// cut returns s within n characters and whether it was cut.
func cut(s string, n int) (string, bool) {
	if n <= 0 {
		return "", s != ""
	}
	if len(s) <= n {
		return s, false
	}
	r := []rune(s)
	if len(r) <= n {
		return s, false
	}
	return string(r[:n]), true
}

func main() {
	// A hostile file that makes a parser recurse fails at 64 MiB of stack
	// rather than growing until the function's memory runs out.
	debug.SetMaxStack(64 << 20)
	guest.Main(guest.Tools{"read": guest.Typed(read)})
}
