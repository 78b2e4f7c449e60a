package main

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// archive is a docx/xlsx/pptx zip whose parts are unpacked within limits.
type archive struct {
	files map[string]*zip.File
	d     *doc
}

func openZip(b []byte, d *doc) (*archive, error) {
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("path: not a readable zip archive: %v", err)
	}
	if len(r.File) > maxZipEntries {
		return nil, fmt.Errorf("path: the archive has %d entries, more than the limit of %d", len(r.File), maxZipEntries)
	}
	a := &archive{files: map[string]*zip.File{}, d: d}
	var declared uint64
	for _, f := range r.File {
		declared += f.UncompressedSize64
		a.files[strings.TrimPrefix(f.Name, "/")] = f
	}
	if declared > maxUnpackedBytes*4 {
		return nil, fmt.Errorf("path: the archive says it unpacks to %d bytes, more than the %d MiB limit: refused as a zip bomb", declared, maxUnpackedBytes*4>>20)
	}
	return a, nil
}

// officeKind tells docx, xlsx and pptx apart by their main part.
func (a *archive) officeKind() string {
	switch {
	case a.files["word/document.xml"] != nil:
		return "docx"
	case a.files["xl/workbook.xml"] != nil:
		return "xlsx"
	case a.files["ppt/presentation.xml"] != nil:
		return "pptx"
	}
	return "zip"
}

// part unpacks one part, bounded in bytes and in ratio to its packed size.
func (a *archive) part(name string) ([]byte, error) {
	f := a.files[name]
	if f == nil {
		return nil, fmt.Errorf("path: the archive has no %s", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("path: %s: %v", name, err)
	}
	defer rc.Close()
	limit := int64(maxPartBytes)
	if left := maxUnpackedBytes - a.d.unpacked; left < limit {
		limit = left
	}
	if byRatio := int64(f.CompressedSize64)*maxZipRatio + 64<<10; byRatio < limit {
		limit = byRatio
	}
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("path: %s: %v", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("path: %s unpacks past the limit (%d MiB a part, %d MiB a file, at most %d times its packed size): refused as a zip bomb", name, maxPartBytes>>20, maxUnpackedBytes>>20, maxZipRatio)
	}
	a.d.unpacked += int64(len(b))
	return b, nil
}

// rels reads the relationships of a part: id to target, resolved against the part's folder.
func (a *archive) rels(partName string) (map[string]string, error) {
	dir, file := path.Split(partName)
	name := dir + "_rels/" + file + ".rels"
	out := map[string]string{}
	if a.files[name] == nil {
		return out, nil
	}
	b, err := a.part(name)
	if err != nil {
		return nil, err
	}
	err = walkXML(b, name, func(dec *xml.Decoder, t xml.Token) error {
		if se, ok := t.(xml.StartElement); ok && se.Name.Local == "Relationship" {
			var id, target, mode string
			for _, at := range se.Attr {
				switch at.Name.Local {
				case "Id":
					id = at.Value
				case "Target":
					target = at.Value
				case "TargetMode":
					mode = at.Value
				}
			}
			if mode == "External" {
				return nil
			}
			if strings.HasPrefix(target, "/") {
				out[id] = strings.TrimPrefix(target, "/")
			} else {
				out[id] = path.Clean(dir + target)
			}
		}
		return nil
	})
	return out, err
}

var errStop = errors.New("stop")

// walkXML calls f for each token of an XML part, refusing nesting past
// maxXMLDepth. The decoder never expands external entities.
func walkXML(b []byte, name string, f func(dec *xml.Decoder, t xml.Token) error) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = false
	depth := 0
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("path: %s is not well-formed XML: %v", name, err)
		}
		switch t.(type) {
		case xml.StartElement:
			depth++
			if depth > maxXMLDepth {
				return fmt.Errorf("path: %s nests XML elements more than %d deep", name, maxXMLDepth)
			}
		case xml.EndElement:
			depth--
		}
		if err := f(dec, t); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}
