package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/xuri/excelize/v2"
)

// xlsx reads each sheet as a table (its first row as the header), with
// formatted cell values as Excel shows them.
func (d *doc) xlsx(b []byte) error {
	f, err := excelize.OpenReader(bytes.NewReader(b), excelize.Options{
		UnzipSizeLimit:    maxUnpackedBytes,
		UnzipXMLSizeLimit: maxPartBytes,
	})
	if err != nil {
		return fmt.Errorf("path: not a readable Excel workbook: %v", err)
	}
	defer f.Close()
	for i, name := range f.GetSheetList() {
		if len(d.parts) >= d.limit {
			d.total++
			continue
		}
		rows, cut, err := sheetRows(f, name)
		if err != nil {
			return fmt.Errorf("path: sheet %q: %v", name, err)
		}
		s := section{Kind: "sheet", Index: i + 1, Name: name}
		s.Markdown = "## " + name
		s.Text = name
		if len(rows) == 0 {
			s.Markdown += "\n\n(empty sheet)"
		} else {
			s.Markdown += "\n\n" + tableMarkdown(rows)
			s.Text += "\n" + tableText(rows)
		}
		if cut != "" {
			d.notes = append(d.notes, fmt.Sprintf("sheet %q: %s", name, cut))
		}
		d.add(s)
	}
	return nil
}

// sheetRows reads at most maxSheetRows rows of maxSheetCols cells, dropping
// trailing empty rows and columns.
func sheetRows(f *excelize.File, name string) ([][]string, string, error) {
	it, err := f.Rows(name)
	if err != nil {
		return nil, "", err
	}
	defer it.Close()
	var rows [][]string
	cut := ""
	for it.Next() {
		if len(rows) == maxSheetRows {
			cut = fmt.Sprintf("read the first %d rows (the limit per sheet)", maxSheetRows)
			break
		}
		cols, err := it.Columns()
		if err != nil {
			return nil, "", err
		}
		if len(cols) > maxSheetCols {
			cols = cols[:maxSheetCols]
			cut = fmt.Sprintf("read the first %d columns (the limit per row)", maxSheetCols)
		}
		rows = append(rows, cols)
	}
	for len(rows) > 0 && strings.TrimSpace(strings.Join(rows[len(rows)-1], "")) == "" {
		rows = rows[:len(rows)-1]
	}
	return rows, cut, it.Error()
}
