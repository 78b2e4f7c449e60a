package deck

import (
	"fmt"
	"strings"
)

const emptyTree = `<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>` +
	`<p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/><a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>`

const clrMap = `<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>`

var masterXML = hdr + `<p:sldMaster ` + nsA + ` ` + nsR + ` ` + nsP + `><p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg><p:spTree>` + emptyTree + `</p:spTree></p:cSld>` +
	clrMap + `<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst>` +
	`<p:txStyles><p:titleStyle><a:lvl1pPr algn="l"><a:defRPr sz="3600"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill><a:latin typeface="+mj-lt"/></a:defRPr></a:lvl1pPr></p:titleStyle>` +
	`<p:bodyStyle><a:lvl1pPr marL="342900" indent="-342900"><a:buFont typeface="Arial"/><a:buChar char="&#8226;"/><a:defRPr sz="2400"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill><a:latin typeface="+mn-lt"/></a:defRPr></a:lvl1pPr></p:bodyStyle>` +
	`<p:otherStyle><a:lvl1pPr><a:defRPr sz="1800"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill></a:defRPr></a:lvl1pPr></p:otherStyle></p:txStyles></p:sldMaster>`

var layoutXML = hdr + `<p:sldLayout ` + nsA + ` ` + nsR + ` ` + nsP + ` type="obj" preserve="1"><p:cSld name="Title and Content"><p:spTree>` + emptyTree + `</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>`

var notesMasterXML = hdr + `<p:notesMaster ` + nsA + ` ` + nsR + ` ` + nsP + `><p:cSld><p:spTree>` + emptyTree + `</p:spTree></p:cSld>` + clrMap + `</p:notesMaster>`

func notesXML(notes string) string {
	var b strings.Builder
	b.WriteString(hdr + `<p:notes ` + nsA + ` ` + nsR + ` ` + nsP + `><p:cSld><p:spTree>` + emptyTree)
	if notes != "" {
		b.WriteString(`<p:sp><p:nvSpPr><p:cNvPr id="2" name="Notes"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr>` +
			`<p:spPr><a:xfrm><a:off x="685800" y="4343400"/><a:ext cx="5486400" cy="4114800"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr/><a:lstStyle/>`)
		for _, line := range strings.Split(notes, "\n") {
			b.WriteString(`<a:p><a:r><a:rPr lang="en-US" sz="1200"/><a:t>` + esc(line) + `</a:t></a:r></a:p>`)
		}
		b.WriteString(`</p:txBody></p:sp>`)
	}
	b.WriteString(`</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:notes>`)
	return b.String()
}

// box is a rectangle in EMU.
type box struct{ x, y, w, h int64 }

func xfrm(r box) string {
	return fmt.Sprintf(`<a:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></a:xfrm>`, r.x, r.y, r.w, r.h)
}

func textShape(id int, name, ph string, r box, paras string) string {
	return fmt.Sprintf(`<p:sp><p:nvSpPr><p:cNvPr id="%d" name="%s"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr>%s</p:nvPr></p:nvSpPr>`, id, name, ph) +
		`<p:spPr>` + xfrm(r) + `<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr>` +
		`<p:txBody><a:bodyPr wrap="square"><a:normAutofit/></a:bodyPr><a:lstStyle/>` + paras + `</p:txBody></p:sp>`
}

func run(text string, size int, bold bool) string {
	b := ""
	if bold {
		b = ` b="1"`
	}
	return fmt.Sprintf(`<a:r><a:rPr lang="en-US" sz="%d"%s dirty="0"/><a:t>%s</a:t></a:r>`, size, b, esc(text))
}

func slideStart() string {
	return hdr + `<p:sld ` + nsA + ` ` + nsR + ` ` + nsP + `><p:cSld><p:spTree>` + emptyTree
}

const slideEnd = `</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>`

func titleSlideXML(title, subtitle string) string {
	s := slideStart()
	s += textShape(2, "Title", `<p:ph type="ctrTitle"/>`, box{914400, 2130425, slideW - 2*914400, 1470025},
		`<a:p><a:pPr algn="ctr"/>`+run(title, 4400, true)+`</a:p>`)
	if subtitle != "" {
		s += textShape(3, "Subtitle", `<p:ph type="subTitle" idx="1"/>`, box{1828800, 3886200, slideW - 2*1828800, 1752600},
			`<a:p><a:pPr algn="ctr"><a:buNone/></a:pPr>`+run(subtitle, 2400, false)+`</a:p>`)
	}
	return s + slideEnd
}

func slideXML(sl Slide) string {
	s := slideStart()
	id := 2
	if sl.Title != "" {
		s += textShape(id, "Title", `<p:ph type="title"/>`, box{margin, 274638, slideW - 2*margin, 1143000},
			`<a:p>`+run(sl.Title, 3600, true)+`</a:p>`)
		id++
	}
	content := box{margin, 1600200, slideW - 2*margin, slideH - 1600200 - margin}
	left, right := content, content
	hasSide := sl.Image != nil || len(sl.Table) > 0
	if len(sl.Bullets) > 0 && hasSide {
		left.w = content.w/2 - margin/2
		right.x, right.w = content.x+content.w/2+margin/2, content.w/2-margin/2
	}
	if len(sl.Bullets) > 0 {
		var p strings.Builder
		for _, bl := range sl.Bullets {
			lvl := min(max(bl.Level, 0), 8)
			fmt.Fprintf(&p, `<a:p><a:pPr marL="%d" lvl="%d" indent="-342900"><a:buFont typeface="Arial"/><a:buChar char="&#8226;"/></a:pPr>%s</a:p>`,
				342900+lvl*457200, lvl, run(bl.Text, max(2400-lvl*200, 1400), false))
		}
		s += textShape(id, "Content", `<p:ph idx="1"/>`, left, p.String())
		id++
	}
	if len(sl.Table) > 0 {
		side := right
		if sl.Image != nil {
			side.h /= 2
		}
		s += tableXML(id, sl.Table, side)
		id++
		right.y += side.h
		right.h -= side.h
	}
	if sl.Image != nil {
		s += pictureXML(id, sl.Image, right)
	}
	return s + slideEnd
}

func tableXML(id int, rows [][]string, r box) string {
	cols := 0
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	colW := r.w / int64(cols)
	rowH := int64(370840)
	var b strings.Builder
	fmt.Fprintf(&b, `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="%d" name="Table"/><p:cNvGraphicFramePr><a:graphicFrameLocks noGrp="1"/></p:cNvGraphicFramePr><p:nvPr/></p:nvGraphicFramePr>`, id)
	fmt.Fprintf(&b, `<p:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></p:xfrm>`, r.x, r.y, colW*int64(cols), rowH*int64(len(rows)))
	b.WriteString(`<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblPr firstRow="1" bandRow="1"/><a:tblGrid>`)
	for i := 0; i < cols; i++ {
		fmt.Fprintf(&b, `<a:gridCol w="%d"/>`, colW)
	}
	b.WriteString(`</a:tblGrid>`)
	for i, row := range rows {
		fmt.Fprintf(&b, `<a:tr h="%d">`, rowH)
		for c := 0; c < cols; c++ {
			text := ""
			if c < len(row) {
				text = row[c]
			}
			border := `<a:lnL w="12700"><a:solidFill><a:srgbClr val="808080"/></a:solidFill></a:lnL><a:lnR w="12700"><a:solidFill><a:srgbClr val="808080"/></a:solidFill></a:lnR>` +
				`<a:lnT w="12700"><a:solidFill><a:srgbClr val="808080"/></a:solidFill></a:lnT><a:lnB w="12700"><a:solidFill><a:srgbClr val="808080"/></a:solidFill></a:lnB>`
			fill := ""
			if i == 0 {
				fill = `<a:solidFill><a:srgbClr val="DDE4EE"/></a:solidFill>`
			}
			b.WriteString(`<a:tc><a:txBody><a:bodyPr/><a:lstStyle/><a:p>` + run(text, 1400, i == 0) + `</a:p></a:txBody><a:tcPr>` + border + fill + `</a:tcPr></a:tc>`)
		}
		b.WriteString(`</a:tr>`)
	}
	b.WriteString(`</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`)
	return b.String()
}

// pictureXML fits the image into r, keeping its aspect ratio, centred.
func pictureXML(id int, img *Image, r box) string {
	w, h := r.w, r.h
	if img.Width > 0 && img.Height > 0 {
		if float64(r.w)/float64(r.h) > float64(img.Width)/float64(img.Height) {
			w = r.h * int64(img.Width) / int64(img.Height)
		} else {
			h = r.w * int64(img.Height) / int64(img.Width)
		}
	}
	x, y := r.x+(r.w-w)/2, r.y+(r.h-h)/2
	return fmt.Sprintf(`<p:pic><p:nvPicPr><p:cNvPr id="%d" name="Picture" descr="%s"/><p:cNvPicPr><a:picLocks noChangeAspect="1"/></p:cNvPicPr><p:nvPr/></p:nvPicPr>`, id, esc(img.Description)) +
		`<p:blipFill><a:blip r:embed="rId3"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>` +
		`<p:spPr>` + xfrm(box{x, y, w, h}) + `<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr></p:pic>`
}
