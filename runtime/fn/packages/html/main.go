// Command html is the Subako function package "html": it parses an HTML document,
// given inline or fetched through the host from a granted origin, and returns its
// title, headings, links, forms and visible text. It never runs the page's scripts.
package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/subako/subako/runtime/fn/guest"
)

type parseInput struct {
	HTML string `json:"html"`
	URL  string `json:"url"`
}

func parse(in parseInput) (any, error) {
	if (in.HTML == "") == (in.URL == "") {
		return nil, errors.New("input: give exactly one of html or url")
	}
	if in.HTML != "" {
		return extract(strings.NewReader(in.HTML), "")
	}
	resp, err := guest.Fetch(guest.Request{URL: in.URL, Headers: map[string]string{"Accept": "text/html"}})
	if err != nil {
		return nil, err
	}
	if resp.Status/100 != 2 {
		return nil, fmt.Errorf("url: %s answered HTTP %d", in.URL, resp.Status)
	}
	page, err := extract(strings.NewReader(string(resp.Body)), in.URL)
	if err != nil {
		return nil, err
	}
	page.Status = resp.Status
	return page, nil
}

func main() {
	guest.Main(guest.Tools{"parse": guest.Typed(parse)})
}
