package main

import "strings"

// block is one paragraph-level element of a document or slide.
type block struct {
	heading int // 1..6, or 0
	list    int // nesting level + 1 for a list item, or 0
	ordered bool
	text    string
	table   [][]string
}

func mdEscapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// tableMarkdown renders rows as a Markdown table, the first row as its header.
func tableMarkdown(rows [][]string) string {
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	if width == 0 {
		return ""
	}
	var b strings.Builder
	line := func(r []string) {
		b.WriteString("|")
		for i := 0; i < width; i++ {
			c := ""
			if i < len(r) {
				c = mdEscapeCell(r[i])
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
	for _, r := range rows[1:] {
		line(r)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func tableText(rows [][]string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		cells := make([]string, len(r))
		for j, c := range r {
			cells[j] = strings.Join(strings.Fields(c), " ")
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}

// render turns blocks into Markdown and plain text.
func render(blocks []block) (md, text string) {
	var m, t []string
	n := 0 // running number of an ordered list
	for i, bl := range blocks {
		switch {
		case bl.table != nil:
			m = append(m, tableMarkdown(bl.table))
			t = append(t, tableText(bl.table))
		case bl.heading > 0:
			m = append(m, strings.Repeat("#", min(bl.heading, 6))+" "+bl.text)
			t = append(t, bl.text)
		case bl.list > 0:
			if i == 0 || blocks[i-1].list == 0 {
				n = 0
			}
			n++
			marker := "-"
			if bl.ordered {
				marker = itoa(n) + "."
			}
			item := strings.Repeat("  ", bl.list-1) + marker + " " + bl.text
			// consecutive items form one list: join them without a blank line
			if i > 0 && blocks[i-1].list > 0 && len(m) > 0 {
				m[len(m)-1] += "\n" + item
				t[len(t)-1] += "\n" + strings.Repeat("  ", bl.list-1) + "- " + bl.text
				continue
			}
			m = append(m, item)
			t = append(t, strings.Repeat("  ", bl.list-1)+"- "+bl.text)
		default:
			if strings.TrimSpace(bl.text) == "" {
				continue
			}
			m = append(m, bl.text)
			t = append(t, bl.text)
		}
	}
	return strings.Join(m, "\n\n"), strings.Join(t, "\n")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
