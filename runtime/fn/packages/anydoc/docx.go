package main

import (
	"encoding/xml"
	"strconv"
	"strings"
)

// docx reads word/document.xml: headings by paragraph style, list items by
// numbering, tables (nested tables flattened into their cell).
func (d *doc) docx(z *archive) error {
	styles, err := d.docxStyles(z)
	if err != nil {
		return err
	}
	ordered, err := d.docxNumbering(z)
	if err != nil {
		return err
	}
	b, err := z.part("word/document.xml")
	if err != nil {
		return err
	}
	var (
		blocks    []block
		para      strings.Builder
		inT       bool
		style     string
		numID     string
		ilvl      = -1
		tblDepth  int
		rows      [][]string
		cell      []string
		inCell    bool
		paraCount int
	)
	err = walkXML(b, "word/document.xml", func(dec *xml.Decoder, t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				para.Reset()
				style, numID, ilvl = "", "", -1
			case "pStyle":
				style = attr(t, "val")
			case "numId":
				numID = attr(t, "val")
			case "ilvl":
				ilvl, _ = strconv.Atoi(attr(t, "val"))
			case "t":
				inT = true
			case "tab":
				para.WriteString("\t")
			case "br", "cr":
				para.WriteString(" ")
			case "tbl":
				tblDepth++
				if tblDepth == 1 {
					rows = nil
				}
			case "tr":
				if tblDepth == 1 {
					rows = append(rows, nil)
				}
			case "tc":
				if tblDepth == 1 {
					cell, inCell = nil, true
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
				text := strings.TrimSpace(para.String())
				paraCount++
				if tblDepth > 0 {
					if text != "" {
						cell = append(cell, text)
					}
					return nil
				}
				bl := block{text: text}
				st := styles[style]
				if numID == "" {
					numID = st.numID
				}
				if lvl := headingLevel(st.name, style); lvl > 0 && text != "" {
					bl.heading = lvl
				} else if list, ord := listStyle(st.name); list > 0 && text != "" && (numID == "" || numID == "0") {
					bl.list, bl.ordered = list, ord
				} else if numID != "" && numID != "0" && text != "" {
					bl.list = max(ilvl, 0) + 1
					bl.ordered = ordered[numID+":"+strconv.Itoa(max(ilvl, 0))]
				}
				blocks = append(blocks, bl)
			case "tc":
				if tblDepth == 1 && inCell && len(rows) > 0 {
					rows[len(rows)-1] = append(rows[len(rows)-1], strings.Join(cell, " "))
					inCell = false
				}
			case "tbl":
				tblDepth--
				if tblDepth == 0 && len(rows) > 0 {
					blocks = append(blocks, block{table: rows})
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	md, text := render(blocks)
	d.add(section{Kind: "document", Index: 1, Markdown: md, Text: text})
	return nil
}

// headingLevel reads a style's name ("heading 2", "Title") or id
// ("Heading2"): the title is # and heading N is N+1 #s (at most 6).
func headingLevel(name, id string) int {
	for _, s := range []string{strings.ToLower(name), strings.ToLower(id)} {
		if s == "title" {
			return 1
		}
		if !strings.HasPrefix(s, "heading") {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(s, "heading"))); err == nil && n >= 1 && n <= 9 {
			return min(n+1, 6)
		}
	}
	return 0
}

// listStyle reads Word's built-in list styles by name: "List Bullet 2" is a
// bullet at level 2, "List Number" a numbered item.
func listStyle(name string) (level int, ordered bool) {
	s := strings.ToLower(name)
	for prefix, ord := range map[string]bool{"list bullet": false, "list number": true} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			level = 1
			if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil && n >= 1 && n <= 9 {
				level = n
			}
			return level, ord
		}
	}
	return 0, false
}

type style struct{ name, numID string }

// docxStyles maps style ids to names and list numbering (word/styles.xml),
// which may be absent.
func (d *doc) docxStyles(z *archive) (map[string]style, error) {
	out := map[string]style{}
	if z.files["word/styles.xml"] == nil {
		return out, nil
	}
	b, err := z.part("word/styles.xml")
	if err != nil {
		return nil, err
	}
	id := ""
	err = walkXML(b, "word/styles.xml", func(_ *xml.Decoder, t xml.Token) error {
		if se, ok := t.(xml.StartElement); ok {
			switch se.Name.Local {
			case "style":
				id = attr(se, "styleId")
			case "name":
				if id != "" {
					out[id] = style{name: attr(se, "val")}
				}
			case "numId":
				if st, ok := out[id]; ok {
					st.numID = attr(se, "val")
					out[id] = st
				}
			}
		}
		return nil
	})
	return out, err
}

// docxNumbering tells which list levels are numbered: "numId:ilvl" → ordered.
func (d *doc) docxNumbering(z *archive) (map[string]bool, error) {
	out := map[string]bool{}
	if z.files["word/numbering.xml"] == nil {
		return out, nil
	}
	b, err := z.part("word/numbering.xml")
	if err != nil {
		return nil, err
	}
	abstract := map[string]map[string]bool{} // abstractNumId → ilvl → ordered
	nums := map[string]string{}              // numId → abstractNumId
	var absID, lvl, numID string
	err = walkXML(b, "word/numbering.xml", func(_ *xml.Decoder, t xml.Token) error {
		se, ok := t.(xml.StartElement)
		if !ok {
			return nil
		}
		switch se.Name.Local {
		case "abstractNum":
			absID = attr(se, "abstractNumId")
			abstract[absID] = map[string]bool{}
		case "lvl":
			lvl = attr(se, "ilvl")
		case "numFmt":
			if m := abstract[absID]; m != nil {
				f := attr(se, "val")
				m[lvl] = f != "bullet" && f != "none" && f != ""
			}
		case "num":
			numID = attr(se, "numId")
		case "abstractNumId":
			nums[numID] = attr(se, "val")
		}
		return nil
	})
	for n, a := range nums {
		for l, o := range abstract[a] {
			out[n+":"+l] = o
		}
	}
	return out, err
}
