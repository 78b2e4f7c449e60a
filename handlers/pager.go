package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/subako/subako/runtime"
)

// pager is a list page's Newer and Older links.
type pager struct{ Newer, Older string }

// pagerOf builds the links of a page read from cursor: each keeps the page's
// filters (q) and swaps the cursor. A page reached going older always links
// back towards the newest rows, even an empty one (its rows were deleted);
// a page reached going newer links on only when more newer rows remain.
func pagerOf(path string, q url.Values, cursor string, links runtime.PageLinks) pager {
	at := func(cur string) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "cursor" && len(vs) > 0 && vs[0] != "" {
				v[k] = vs
			}
		}
		if cur != "" {
			v.Set("cursor", cur)
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	var p pager
	if links.Next != "" {
		p.Older = at(links.Next)
	}
	if links.Prev != "" {
		p.Newer = at(links.Prev)
	} else if c, err := runtime.ParseCursor(cursor); err == nil && !c.IsZero() && !c.Back {
		p.Newer = at("")
	}
	return p
}

// queryLimit reads a list verb's limit: 0 when absent, a 422 naming limit
// when not a whole number (the runtime bounds its range).
func queryLimit(c echo.Context) (int, error) {
	l := c.QueryParam("limit")
	if l == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil {
		return 0, &runtime.Error{Kind: runtime.KindInvalid, Code: "invalid_limit", Title: "Invalid query", Field: "limit",
			Detail: "limit must be a whole number between 1 and " + strconv.Itoa(runtime.MaxPageSize)}
	}
	return n, nil
}

// answerList answers a list verb. The answer stays the array it always was;
// a request that names a cursor (an empty one for the first page) gets
// {items, next_cursor, prev_cursor} instead. Either way a Link header points
// to the next page.
func answerList[T any](c echo.Context, items []T, links runtime.PageLinks, err error) error {
	if err != nil {
		return err
	}
	if items == nil {
		items = []T{}
	}
	if links.Next != "" {
		u := *c.Request().URL
		q := u.Query()
		q.Set("cursor", links.Next)
		u.RawQuery = q.Encode()
		c.Response().Header().Set("Link", "<"+u.RequestURI()+`>; rel="next"`)
	}
	if _, ok := c.QueryParams()["cursor"]; ok {
		return c.JSON(http.StatusOK, struct {
			Items []T `json:"items"`
			runtime.PageLinks
		}{items, links})
	}
	return c.JSON(http.StatusOK, items)
}
