// Package deck writes a PowerPoint (.pptx, Office Open XML) presentation from
// an outline: a title slide, then slides with a title, bullets, a picture, a
// table and speaker notes. It writes only the parts a presentation needs
// (one slide master, one layout, a theme, a notes master) with every shape
// placed explicitly, so the deck opens the same in PowerPoint, LibreOffice
// and Keynote.
package deck

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Outline is a whole deck.
type Outline struct {
	Title    string
	Subtitle string
	Slides   []Slide
}

// Slide is one slide after the title slide.
type Slide struct {
	Title   string
	Bullets []Bullet
	Image   *Image
	Table   [][]string // the first row is the header
	Notes   string
}

// Bullet is one bullet; Level 0 is the outermost.
type Bullet struct {
	Text  string
	Level int
}

// Image is a picture's bytes with its pixel size (for its aspect ratio).
type Image struct {
	Data          []byte
	Ext           string // png, jpeg or gif
	Width, Height int
	Description   string
}

// Slide size: 16:9, in EMU (914400 to the inch).
const (
	slideW = 12192000
	slideH = 6858000
	margin = 457200
)

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

const (
	nsA = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"`
	nsR = `xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	nsP = `xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
	hdr = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

	relTypes  = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
	ctPresML  = "application/vnd.openxmlformats-officedocument.presentationml."
	ctDrawing = "application/vnd.openxmlformats-officedocument."
)

type rel struct{ id, typ, target string }

func relsXML(rels []rel) string {
	var b strings.Builder
	b.WriteString(hdr + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	for _, r := range rels {
		typ := r.typ
		if !strings.HasPrefix(typ, "http") {
			typ = relTypes + typ
		}
		fmt.Fprintf(&b, `<Relationship Id="%s" Type="%s" Target="%s"/>`, r.id, typ, r.target)
	}
	b.WriteString(`</Relationships>`)
	return b.String()
}

// Write writes the deck as a .pptx to w.
func Write(w io.Writer, o Outline) error {
	z := zip.NewWriter(w)
	put := func(name, body string) error {
		f, err := z.Create(name)
		if err != nil {
			return err
		}
		_, err = io.WriteString(f, body)
		return err
	}
	putBytes := func(name string, body []byte) error {
		f, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			return err
		}
		_, err = f.Write(body)
		return err
	}

	// The title slide comes first, when there is a title.
	slides := o.Slides
	titleSlide := o.Title != "" || o.Subtitle != ""
	n := len(slides)
	if titleSlide {
		n++
	}

	var ct strings.Builder
	ct.WriteString(hdr + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
		`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
		`<Default Extension="xml" ContentType="application/xml"/>` +
		`<Default Extension="png" ContentType="image/png"/><Default Extension="jpeg" ContentType="image/jpeg"/><Default Extension="gif" ContentType="image/gif"/>` +
		`<Override PartName="/ppt/presentation.xml" ContentType="` + ctPresML + `presentation.main+xml"/>` +
		`<Override PartName="/ppt/slideMasters/slideMaster1.xml" ContentType="` + ctPresML + `slideMaster+xml"/>` +
		`<Override PartName="/ppt/slideLayouts/slideLayout1.xml" ContentType="` + ctPresML + `slideLayout+xml"/>` +
		`<Override PartName="/ppt/notesMasters/notesMaster1.xml" ContentType="` + ctPresML + `notesMaster+xml"/>` +
		`<Override PartName="/ppt/theme/theme1.xml" ContentType="` + ctDrawing + `theme+xml"/>` +
		`<Override PartName="/ppt/theme/theme2.xml" ContentType="` + ctDrawing + `theme+xml"/>` +
		`<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>` +
		`<Override PartName="/docProps/app.xml" ContentType="` + ctDrawing + `extended-properties+xml"/>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&ct, `<Override PartName="/ppt/slides/slide%d.xml" ContentType="%sslide+xml"/>`, i, ctPresML)
		fmt.Fprintf(&ct, `<Override PartName="/ppt/notesSlides/notesSlide%d.xml" ContentType="%snotesSlide+xml"/>`, i, ctPresML)
	}
	ct.WriteString(`</Types>`)

	parts := []struct{ name, body string }{
		{"[Content_Types].xml", ct.String()},
		{"_rels/.rels", relsXML([]rel{{"rId1", "officeDocument", "ppt/presentation.xml"},
			{"rId2", "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties", "docProps/core.xml"},
			{"rId3", "extended-properties", "docProps/app.xml"}})},
		{"docProps/core.xml", hdr + `<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + esc(o.Title) + `</dc:title><dc:creator>Subako pptx</dc:creator></cp:coreProperties>`},
		{"docProps/app.xml", hdr + fmt.Sprintf(`<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"><Application>Subako pptx</Application><Slides>%d</Slides></Properties>`, n)},
		{"ppt/slideMasters/slideMaster1.xml", masterXML},
		{"ppt/slideMasters/_rels/slideMaster1.xml.rels", relsXML([]rel{{"rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"}, {"rId2", "theme", "../theme/theme1.xml"}})},
		{"ppt/slideLayouts/slideLayout1.xml", layoutXML},
		{"ppt/slideLayouts/_rels/slideLayout1.xml.rels", relsXML([]rel{{"rId1", "slideMaster", "../slideMasters/slideMaster1.xml"}})},
		{"ppt/notesMasters/notesMaster1.xml", notesMasterXML},
		{"ppt/notesMasters/_rels/notesMaster1.xml.rels", relsXML([]rel{{"rId1", "theme", "../theme/theme2.xml"}})},
		{"ppt/theme/theme1.xml", themeXML},
		{"ppt/theme/theme2.xml", themeXML},
	}

	var pres strings.Builder
	presRels := []rel{{"rId1", "slideMaster", "slideMasters/slideMaster1.xml"}, {"rId2", "notesMaster", "notesMasters/notesMaster1.xml"}, {"rId3", "theme", "theme/theme1.xml"}}
	pres.WriteString(hdr + `<p:presentation ` + nsA + ` ` + nsR + ` ` + nsP + ` saveSubsetFonts="1">` +
		`<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>` +
		`<p:notesMasterIdLst><p:notesMasterId r:id="rId2"/></p:notesMasterIdLst><p:sldIdLst>`)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("rId%d", 100+i)
		presRels = append(presRels, rel{id, "slide", fmt.Sprintf("slides/slide%d.xml", i)})
		fmt.Fprintf(&pres, `<p:sldId id="%d" r:id="%s"/>`, 255+i, id)
	}
	fmt.Fprintf(&pres, `</p:sldIdLst><p:sldSz cx="%d" cy="%d"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>`, slideW, slideH)
	parts = append(parts, struct{ name, body string }{"ppt/presentation.xml", pres.String()},
		struct{ name, body string }{"ppt/_rels/presentation.xml.rels", relsXML(presRels)})

	for _, p := range parts {
		if err := put(p.name, p.body); err != nil {
			return err
		}
	}

	num := 0
	emit := func(body string, notes string, img *Image) error {
		num++
		rels := []rel{{"rId1", "slideLayout", "../slideLayouts/slideLayout1.xml"}, {"rId2", "notesSlide", fmt.Sprintf("../notesSlides/notesSlide%d.xml", num)}}
		if img != nil {
			media := fmt.Sprintf("image%d.%s", num, img.Ext)
			rels = append(rels, rel{"rId3", "image", "../media/" + media})
			if err := putBytes("ppt/media/"+media, img.Data); err != nil {
				return err
			}
		}
		if err := put(fmt.Sprintf("ppt/slides/slide%d.xml", num), body); err != nil {
			return err
		}
		if err := put(fmt.Sprintf("ppt/slides/_rels/slide%d.xml.rels", num), relsXML(rels)); err != nil {
			return err
		}
		if err := put(fmt.Sprintf("ppt/notesSlides/notesSlide%d.xml", num), notesXML(notes)); err != nil {
			return err
		}
		return put(fmt.Sprintf("ppt/notesSlides/_rels/notesSlide%d.xml.rels", num), relsXML([]rel{
			{"rId1", "notesMaster", "../notesMasters/notesMaster1.xml"}, {"rId2", "slide", fmt.Sprintf("../slides/slide%d.xml", num)}}))
	}
	if titleSlide {
		if err := emit(titleSlideXML(o.Title, o.Subtitle), "", nil); err != nil {
			return err
		}
	}
	for _, s := range slides {
		if err := emit(slideXML(s), s.Notes, s.Image); err != nil {
			return err
		}
	}
	return z.Close()
}

// Bytes is Write into memory.
func Bytes(o Outline) ([]byte, error) {
	var b bytes.Buffer
	err := Write(&b, o)
	return b.Bytes(), err
}
