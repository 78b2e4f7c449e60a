package web_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/subako/subako/runtime"
)

// Lists by cursor (issue 11): every row of every list is reachable by
// following its pages, each exactly once, in both directions.

// listPages are the console's lists, each with how a row's seeded id shows.
var listPages = []struct {
	name, path string
	row        *regexp.Regexp
}{
	{"sessions", "/sessions", regexp.MustCompile(`href="/sessions/(ses_seed\d+)"`)},
	{"audit", "/audit", regexp.MustCompile(`(tgt_seed\d+)`)},
	{"approvals history", "/approvals/history", regexp.MustCompile(`data-approval="(apr_seed\d+)"`)},
	{"sandboxes", "/sandboxes", regexp.MustCompile(`data-sandbox="(sbx_seed\d+)"`)},
	{"usage", "/usage", regexp.MustCompile(`>(sub_seed\d+)<`)},
}

var (
	olderLink = regexp.MustCompile(`<a href="([^"]+)" rel="next" data-testid="pager-older">`)
	newerLink = regexp.MustCompile(`<a href="([^"]+)" rel="prev" data-testid="pager-newer">`)
)

// walk follows a page's link (older or newer) from path until there is none,
// and returns the seeded ids of each page, in order.
func walk(t *testing.T, b *client, path string, link, row *regexp.Regexp) [][]string {
	t.Helper()
	var pages [][]string
	for path != "" {
		if len(pages) > 20 {
			t.Fatalf("more than 20 pages: the links go round in circles (%s)", path)
		}
		resp, body := b.get(path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		var ids []string
		for _, m := range row.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		pages = append(pages, ids)
		path = ""
		if m := link.FindStringSubmatch(body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	return pages
}

func TestListPagesReachEveryRowOnce(t *testing.T) {
	e := newEnv(t)
	owner := e.owner()
	p, err := e.rt.PrincipalForEmail(t.Context(), "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*runtime.PageSize + 7 // three pages, the last one short
	seedLists(t, e.rt, p, n)
	for _, lp := range listPages {
		t.Run(lp.name, func(t *testing.T) {
			pages := walk(t, owner, lp.path, olderLink, lp.row)
			if len(pages) != 3 {
				t.Fatalf("%d rows took %d pages of %d, want 3", n, len(pages), runtime.PageSize)
			}
			seen := map[string]int{}
			var got []string
			for _, pg := range pages {
				for _, id := range pg {
					seen[id]++
					got = append(got, id)
				}
			}
			for i := range n {
				if id := seedIDOf(lp.row, i); seen[id] != 1 {
					t.Errorf("%s is on %d pages, want exactly 1", id, seen[id])
				}
			}
			// Newest first; rows of the same second by id, the greater first.
			var want []string
			for g := 0; 3*g < n; g++ {
				for i := min(3*g+2, n-1); i >= 3*g; i-- {
					want = append(want, seedIDOf(lp.row, i))
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("rows in the order\n%v\nwant\n%v", got, want)
			}
			// Back from the last page, Newer links lead to the first page again.
			resp, body := owner.get(lp.path)
			if resp.StatusCode != http.StatusOK || newerLink.MatchString(body) {
				t.Fatalf("the first page offers a Newer link (%d)", resp.StatusCode)
			}
			m := olderLink.FindStringSubmatch(body)
			_, body = owner.get(html.UnescapeString(m[1]))
			m = olderLink.FindStringSubmatch(body)
			back := walk(t, owner, html.UnescapeString(m[1]), newerLink, lp.row)
			if len(back) != 3 || strings.Join(back[2], " ") != strings.Join(pages[0], " ") {
				t.Errorf("Newer from the last page: %d pages, ending %v; want 3 ending with the first page %v", len(back), back[len(back)-1], pages[0])
			}
		})
	}
}

// seedIDOf is the i-th seeded id of the kind a row pattern matches.
func seedIDOf(row *regexp.Regexp, i int) string {
	for _, prefix := range []string{"ses", "tgt", "apr", "sbx", "sub"} {
		if strings.Contains(row.String(), prefix+"_seed") {
			return seedID(prefix, i)
		}
	}
	panic("no seeded kind in " + row.String())
}
