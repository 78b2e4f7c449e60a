package main

import (
	"encoding/xml"
	"strconv"
	"strings"
)

// pptx reads the slides in the order of ppt/presentation.xml: the title
// placeholder as the slide's heading, body text as (nested) bullets, tables,
// pictures by their description, and the speaker notes.
func (d *doc) pptx(z *archive) error {
	rels, err := z.rels("ppt/presentation.xml")
	if err != nil {
		return err
	}
	b, err := z.part("ppt/presentation.xml")
	if err != nil {
		return err
	}
	var slides []string
	err = walkXML(b, "ppt/presentation.xml", func(_ *xml.Decoder, t xml.Token) error {
		if se, ok := t.(xml.StartElement); ok && se.Name.Local == "sldId" {
			for _, a := range se.Attr {
				if a.Name.Local == "id" && a.Name.Space != "" { // r:id
					if target := rels[a.Value]; target != "" {
						slides = append(slides, target)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, name := range slides {
		if len(d.parts) >= d.limit {
			d.total += len(slides) - i
			break
		}
		s, err := d.slide(z, name)
		if err != nil {
			return err
		}
		s.Kind, s.Index = "slide", i+1
		d.add(s)
	}
	return nil
}

// slide reads one slide part and its notes.
func (d *doc) slide(z *archive, name string) (section, error) {
	b, err := z.part(name)
	if err != nil {
		return section{}, err
	}
	title, blocks, err := shapes(b, name, false)
	if err != nil {
		return section{}, err
	}
	var s section
	s.Name = title
	head := "Slide"
	if s.Name != "" {
		head += ": " + s.Name
	}
	md, text := render(blocks)
	rels, err := z.rels(name)
	if err != nil {
		return s, err
	}
	for _, target := range rels {
		if strings.Contains(target, "notesSlides/") && z.files[target] != nil {
			nb, err := z.part(target)
			if err != nil {
				return s, err
			}
			_, nblocks, err := shapes(nb, target, true)
			if err != nil {
				return s, err
			}
			_, s.Notes = render(nblocks)
		}
	}
	s.Markdown = strings.TrimSpace("## " + head + "\n\n" + md)
	if s.Notes != "" {
		s.Markdown += "\n\n> **Notes:** " + strings.ReplaceAll(s.Notes, "\n", "\n> ")
	}
	s.Text = strings.TrimSpace(s.Name + "\n" + text)
	return s, nil
}

// shapes reads a slide's (or notes page's) shapes: the title, and the other
// text as blocks. With notesOnly, only the notes body placeholder is read.
func shapes(b []byte, name string, notesOnly bool) (string, []block, error) {
	var (
		title    []string
		blocks   []block
		phType   string
		isPh     bool
		inSp     bool
		inT      bool
		para     strings.Builder
		lvl      int
		bullet   int // 1 = a bullet or number asked for, -1 = buNone, 0 = inherited
		numbered bool
		tbl      [][]string
		cell     []string
		inTbl    bool
	)
	err := walkXML(b, name, func(_ *xml.Decoder, t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "sp":
				inSp, isPh, phType = true, false, ""
			case "ph":
				isPh, phType = true, attr(t, "type")
			case "p":
				if strings.Contains(t.Name.Space, "drawingml") {
					para.Reset()
					lvl, bullet, numbered = 0, 0, false
				}
			case "pPr":
				lvl, _ = strconv.Atoi(attr(t, "lvl"))
			case "buNone":
				bullet = -1
			case "buChar":
				bullet = 1
			case "buAutoNum":
				bullet, numbered = 1, true
			case "t":
				inT = true
			case "br":
				para.WriteString(" ")
			case "tbl":
				tbl, inTbl = nil, true
			case "tr":
				if inTbl {
					tbl = append(tbl, nil)
				}
			case "tc":
				cell = nil
			case "cNvPr":
				if !notesOnly && !inSp {
					if descr := attr(t, "descr"); descr != "" {
						blocks = append(blocks, block{text: "[image: " + descr + "]"})
					}
				}
			}
		case xml.CharData:
			if inT {
				para.Write(t)
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inT = false
			case "p":
				if !strings.Contains(t.Name.Space, "drawingml") {
					return nil
				}
				text := strings.TrimSpace(para.String())
				if text == "" {
					return nil
				}
				switch {
				case inTbl:
					cell = append(cell, text)
				case notesOnly:
					if isPh && phType == "body" {
						blocks = append(blocks, block{text: text})
					}
				case isPh && (phType == "title" || phType == "ctrTitle"):
					title = append(title, text)
				case isPh && (phType == "" || phType == "body" || phType == "obj") && bullet >= 0, bullet > 0:
					blocks = append(blocks, block{list: lvl + 1, ordered: numbered, text: text})
				case isPh && (phType == "sldNum" || phType == "dt" || phType == "ftr"):
				default:
					blocks = append(blocks, block{text: text})
				}
			case "sp":
				inSp = false
			case "tc":
				if inTbl && len(tbl) > 0 {
					tbl[len(tbl)-1] = append(tbl[len(tbl)-1], strings.Join(cell, " "))
				}
			case "tbl":
				inTbl = false
				if len(tbl) > 0 && !notesOnly {
					blocks = append(blocks, block{table: tbl})
				}
			}
		}
		return nil
	})
	return strings.Join(title, " "), blocks, err
}
