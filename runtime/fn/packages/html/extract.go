package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxText keeps the visible text within what a model can use in one answer.
const maxText = 100_000

// Page is what parse returns.
type Page struct {
	URL         string    `json:"url,omitempty"`
	Status      int       `json:"status,omitempty"`
	Title       string    `json:"title"`
	Lang        string    `json:"lang,omitempty"`
	Description string    `json:"description,omitempty"`
	Headings    []Heading `json:"headings"`
	Links       []Link    `json:"links"`
	Forms       []Form    `json:"forms"`
	Text        string    `json:"text"`
	Truncated   bool      `json:"text_truncated,omitempty"`
}

// Heading is an h1..h6 element.
type Heading struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
}

// Link is an a element with an href, resolved against the page's URL if known.
type Link struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// Form is a form element and its named controls.
type Form struct {
	Action string  `json:"action"`
	Method string  `json:"method"`
	Inputs []Input `json:"inputs"`
}

// Input is an input, select, textarea or button inside a form.
type Input struct {
	Tag   string `json:"tag"`
	Name  string `json:"name,omitempty"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value,omitempty"`
}

func extract(r io.Reader, pageURL string) (*Page, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("html: %w", err)
	}
	var base *url.URL
	if pageURL != "" {
		base, _ = url.Parse(pageURL)
	}
	p := &Page{URL: pageURL, Headings: []Heading{}, Links: []Link{}, Forms: []Form{}}
	w := walker{page: p, base: base}
	w.walk(doc)
	p.Text, p.Truncated = collapse(w.text.String())
	return p, nil
}

type walker struct {
	page *Page
	base *url.URL
	form *Form
	text strings.Builder
}

func (w *walker) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text.WriteString(n.Data)
		w.text.WriteByte(' ')
		return
	case html.ElementNode:
		if !w.element(n) {
			return
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
	if n.DataAtom == atom.Form {
		w.form = nil
	}
}

// element records n and reports whether its children should be walked.
func (w *walker) element(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template:
		return false
	case atom.Html:
		w.page.Lang = attr(n, "lang")
	case atom.Title:
		if w.page.Title == "" {
			w.page.Title = squash(textOf(n))
		}
		return false
	case atom.Meta:
		if strings.EqualFold(attr(n, "name"), "description") {
			w.page.Description = attr(n, "content")
		}
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		level := int(n.Data[1] - '0')
		w.page.Headings = append(w.page.Headings, Heading{Level: level, Text: squash(textOf(n))})
	case atom.A:
		if href, ok := attrOK(n, "href"); ok {
			w.page.Links = append(w.page.Links, Link{Href: w.resolve(href), Text: squash(textOf(n))})
		}
	case atom.Form:
		w.page.Forms = append(w.page.Forms, Form{
			Action: w.resolve(attr(n, "action")),
			Method: strings.ToUpper(orDefault(attr(n, "method"), "get")),
			Inputs: []Input{},
		})
		w.form = &w.page.Forms[len(w.page.Forms)-1]
	case atom.Input, atom.Select, atom.Textarea, atom.Button:
		if w.form != nil {
			w.form.Inputs = append(w.form.Inputs, Input{
				Tag: n.Data, Name: attr(n, "name"), Type: attr(n, "type"), Value: attr(n, "value"),
			})
		}
	}
	return true
}

func (w *walker) resolve(ref string) string {
	if w.base == nil {
		return ref
	}
	u, err := w.base.Parse(ref)
	if err != nil {
		return ref
	}
	return u.String()
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// squash joins whitespace runs into single spaces.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func collapse(s string) (string, bool) {
	s = squash(s)
	if len(s) <= maxText {
		return s, false
	}
	cut := maxText
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut], true
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
