// Command pptx is the Subako function package "pptx": it builds a PowerPoint
// deck from a JSON outline and writes it into the session volume (/volume),
// reading pictures from the volume too. The deck itself is written by the
// deck package (Office Open XML by hand, no third-party code).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/subako/subako/runtime/fn/guest"
	"github.com/subako/subako/runtime/fn/packages/pptx/deck"
)

// Limits, also stated in manifest.json's schema.
const (
	maxSlides      = 200
	maxBullets     = 100
	maxBulletLevel = 8
	maxShortText   = 500   // titles
	maxText        = 4000  // one bullet
	maxNotes       = 20000 // one slide's notes
	maxRows        = 100
	maxCols        = 20
	maxCell        = 1000
	maxImageBytes  = 10 << 20
	maxAllImages   = 50 << 20
	maxImagePixels = 50_000_000 // width × height, so a decoded header cannot claim a huge picture
)

type bullet struct {
	Text  string `json:"text"`
	Level int    `json:"level"`
}

// UnmarshalJSON takes a string or {text, level}.
func (b *bullet) UnmarshalJSON(raw []byte) error {
	if len(raw) > 0 && raw[0] == '"' {
		return json.Unmarshal(raw, &b.Text)
	}
	type plain bullet
	var p plain
	if err := json.Unmarshal(raw, &p); err != nil {
		return errors.New("a bullet is a string or {text, level}")
	}
	*b = bullet(p)
	return nil
}

type slideIn struct {
	Title   string     `json:"title"`
	Bullets []bullet   `json:"bullets"`
	Image   *imageIn   `json:"image"`
	Table   [][]string `json:"table"`
	Notes   string     `json:"notes"`
}

type imageIn struct {
	Path        string `json:"path"`
	Description string `json:"description"`
}

type buildInput struct {
	Path      string    `json:"path"`
	Title     string    `json:"title"`
	Subtitle  string    `json:"subtitle"`
	Overwrite bool      `json:"overwrite"`
	Slides    []slideIn `json:"slides"`
}

func volumePath(field, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s: required (a path in the session volume)", field)
	}
	if !strings.HasPrefix(p, "/") {
		p = "/volume/" + p
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("%s: %q climbs out with ..", field, p)
		}
	}
	clean := path.Clean(p)
	if !strings.HasPrefix(clean, "/volume/") {
		return "", fmt.Errorf("%s: %q is not a file under /volume", field, p)
	}
	return clean, nil
}

func checkText(field, s string, limit int) error {
	if n := utf8.RuneCountInString(s); n > limit {
		return fmt.Errorf("%s: %d characters, more than the limit of %d", field, n, limit)
	}
	return nil
}

func readImage(field string, in *imageIn, total *int) (*deck.Image, error) {
	p, err := volumePath(field+".path", in.Path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s.path: %s does not exist (or this function has no volume grant)", field, p)
		}
		return nil, fmt.Errorf("%s.path: %v", field, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s.path: %v", field, err)
	}
	if len(data) > maxImageBytes {
		return nil, fmt.Errorf("%s.path: %s is more than the %d MiB limit on a picture", field, p, maxImageBytes>>20)
	}
	if *total += len(data); *total > maxAllImages {
		return nil, fmt.Errorf("%s.path: the deck's pictures pass the %d MiB limit on all pictures", field, maxAllImages>>20)
	}
	cfg, format, err := image.DecodeConfig(strings.NewReader(string(data)))
	if err != nil {
		return nil, fmt.Errorf("%s.path: %s is not a PNG, JPEG or GIF picture (%v)", field, p, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxImagePixels {
		return nil, fmt.Errorf("%s.path: %s is %d×%d pixels, outside 1..%d pixels", field, p, cfg.Width, cfg.Height, maxImagePixels)
	}
	if err := checkText(field+".description", in.Description, 1000); err != nil {
		return nil, err
	}
	desc := in.Description
	if desc == "" {
		desc = path.Base(p)
	}
	return &deck.Image{Data: data, Ext: format, Width: cfg.Width, Height: cfg.Height, Description: desc}, nil
}

// outline checks the input against every limit and reads the pictures.
func outline(in buildInput) (deck.Outline, error) {
	o := deck.Outline{Title: in.Title, Subtitle: in.Subtitle}
	if err := checkText("title", in.Title, maxShortText); err != nil {
		return o, err
	}
	if err := checkText("subtitle", in.Subtitle, maxShortText); err != nil {
		return o, err
	}
	if len(in.Slides) > maxSlides {
		return o, fmt.Errorf("slides: %d slides, more than the limit of %d", len(in.Slides), maxSlides)
	}
	if len(in.Slides) == 0 && in.Title == "" && in.Subtitle == "" {
		return o, errors.New("slides: empty, and no title: the deck would have no slide")
	}
	total := 0
	for i, s := range in.Slides {
		f := fmt.Sprintf("slides[%d]", i)
		out := deck.Slide{Title: s.Title, Notes: strings.ReplaceAll(s.Notes, "\r\n", "\n"), Table: s.Table}
		if err := checkText(f+".title", s.Title, maxShortText); err != nil {
			return o, err
		}
		if err := checkText(f+".notes", s.Notes, maxNotes); err != nil {
			return o, err
		}
		if len(s.Bullets) > maxBullets {
			return o, fmt.Errorf("%s.bullets: %d bullets, more than the limit of %d", f, len(s.Bullets), maxBullets)
		}
		for j, b := range s.Bullets {
			if err := checkText(fmt.Sprintf("%s.bullets[%d].text", f, j), b.Text, maxText); err != nil {
				return o, err
			}
			if b.Level < 0 || b.Level > maxBulletLevel {
				return o, fmt.Errorf("%s.bullets[%d].level: %d is outside 0..%d", f, j, b.Level, maxBulletLevel)
			}
			out.Bullets = append(out.Bullets, deck.Bullet{Text: b.Text, Level: b.Level})
		}
		if len(s.Table) > maxRows {
			return o, fmt.Errorf("%s.table: %d rows, more than the limit of %d", f, len(s.Table), maxRows)
		}
		for r, row := range s.Table {
			if len(row) > maxCols {
				return o, fmt.Errorf("%s.table[%d]: %d cells, more than the limit of %d", f, r, len(row), maxCols)
			}
			for c, cell := range row {
				if err := checkText(fmt.Sprintf("%s.table[%d][%d]", f, r, c), cell, maxCell); err != nil {
					return o, err
				}
			}
		}
		if len(s.Table) > 0 && len(s.Table[0]) == 0 {
			return o, fmt.Errorf("%s.table[0]: the header row has no cells", f)
		}
		if s.Image != nil {
			img, err := readImage(f+".image", s.Image, &total)
			if err != nil {
				return o, err
			}
			out.Image = img
		}
		o.Slides = append(o.Slides, out)
	}
	return o, nil
}

type buildOutput struct {
	Path   string `json:"path"`
	Slides int    `json:"slides"`
	Bytes  int    `json:"bytes"`
}

func build(in buildInput) (any, error) {
	p, err := volumePath("path", in.Path)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(path.Ext(p), ".pptx") {
		return nil, fmt.Errorf("path: %q must end in .pptx", in.Path)
	}
	if _, err := os.Stat(p); err == nil && !in.Overwrite {
		return nil, fmt.Errorf("path: %s exists; set overwrite to replace it", p)
	}
	o, err := outline(in)
	if err != nil {
		return nil, err
	}
	b, err := deck.Bytes(o)
	if err != nil {
		return nil, fmt.Errorf("write deck: %v", err)
	}
	if dir := path.Dir(p); dir != "/volume" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("path: make folder %s: %v", dir, err)
		}
	}
	// Written beside it, then renamed: a failed write leaves no half deck
	// and an overwritten deck as it was.
	tmp := p + ".partial"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("path: write %s: %v (a volume grant of write is needed, within the volume's limits)", p, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("path: write %s: %v", p, err)
	}
	slides := len(o.Slides)
	if o.Title != "" || o.Subtitle != "" {
		slides++
	}
	return buildOutput{Path: p, Slides: slides, Bytes: len(b)}, nil
}

func main() {
	guest.Main(guest.Tools{"build": guest.Typed(build)})
}
