package runtime

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// PageSize is how many rows a console list page shows; MaxPageSize bounds
// the `limit` of the API's list verbs.
const (
	PageSize    = 50
	MaxPageSize = 500
)

// Cursor is a position in a list ordered by (time, id): the row a page
// continues after. Lists page by it rather than by an offset, so a deep page
// costs what the first one does (an index seek) and a row written meanwhile
// neither repeats nor hides another.
type Cursor struct {
	At time.Time
	ID string
	// Back pages towards the start of the list (the "Newer" link of a list
	// that shows the newest first) instead of away from it.
	Back bool
}

// IsZero reports whether c is the start of the list.
func (c Cursor) IsZero() bool { return c.ID == "" }

// String is the opaque text a page's link or an API answer carries.
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	dir := "n"
	if c.Back {
		dir = "p"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(dir + "|" + strconv.FormatInt(c.At.UnixNano(), 10) + "|" + c.ID))
}

// ParseCursor reads a cursor a list gave out; "" is the start of the list.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	bad := invalid("cursor", "invalid_cursor", "cursor must be a next_cursor a list gave out, unchanged; leave it out to start from the first page")
	if len(s) > 200 {
		return Cursor{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, bad
	}
	parts := strings.SplitN(string(raw), "|", 3)
	if len(parts) != 3 || (parts[0] != "n" && parts[0] != "p") || parts[2] == "" {
		return Cursor{}, bad
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return Cursor{}, bad
	}
	for _, r := range parts[2] {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return Cursor{}, bad
		}
	}
	return Cursor{At: time.Unix(0, ns).UTC(), ID: parts[2], Back: parts[0] == "p"}, nil
}

// PageLinks are the cursors of the pages beside one: Next continues the
// list's order (older rows in a newest-first list), Prev goes back towards
// its start. Empty means there is no such page.
type PageLinks struct {
	Next string `json:"next_cursor"`
	Prev string `json:"prev_cursor,omitempty"`
}

// pageLimit bounds a page's size: def when unset, an error naming limit
// when out of range.
func pageLimit(limit, def int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > MaxPageSize:
		return 0, invalid("limit", "invalid_limit", fmt.Sprintf("limit must be between 1 and %d", MaxPageSize))
	}
	return limit, nil
}

// keyset orders q by (col, idCol) in the list's direction (desc: newest
// first) and starts it after c, reading one row more than limit so the page
// knows whether another follows. The bound is written as col <= ? AND (...)
// rather than a row value or an OR alone, so both SQLite and PostgreSQL seek
// the index on (col, id) to the cursor instead of walking to it.
func keyset(q *gorm.DB, col, idCol string, c Cursor, desc bool, limit int) *gorm.DB {
	down := desc != c.Back
	dir, cmp, cmpEq := "ASC", ">", ">="
	if down {
		dir, cmp, cmpEq = "DESC", "<", "<="
	}
	if !c.IsZero() {
		q = q.Where(col+" "+cmpEq+" ? AND ("+col+" "+cmp+" ? OR "+idCol+" "+cmp+" ?)", c.At, c.At, c.ID)
	}
	return q.Order(col + " " + dir).Order(idCol + " " + dir).Limit(limit + 1)
}

// keysetUnion is the ids of one page after c of the union of branches, a
// list's query split where its filter is an OR of conditions that different
// indexes serve. With the OR, a database reads either the list's index
// whole, newest first, when few rows match, or every matching row, then
// sorts them, when many do; each branch instead seeks its own index in the
// list's order and reads at most a page. The caller reads the rows of these
// ids with keyset again, which orders them and trims the page. Each branch
// must carry all of the list's other conditions, or a page comes up short.
func keysetUnion(db *gorm.DB, col, idCol string, c Cursor, desc bool, limit int, branches ...*gorm.DB) *gorm.DB {
	sql := make([]string, len(branches))
	args := make([]any, len(branches))
	for i, b := range branches {
		sql[i] = fmt.Sprintf("SELECT %s FROM (?) AS branch%d", idCol, i)
		args[i] = keyset(b.Select(idCol), col, idCol, c, desc, limit)
	}
	return db.Raw(strings.Join(sql, " UNION ALL "), args...)
}

// pageOf trims what keyset read to the page, in the list's order, and says
// where the pages beside it start.
func pageOf[T any](rows []T, c Cursor, limit int, key func(T) (time.Time, string)) ([]T, PageLinks) {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	var links PageLinks
	if c.Back {
		slices.Reverse(rows)
	}
	if len(rows) == 0 {
		return rows, links
	}
	at := func(row T, back bool) string {
		t, id := key(row)
		return Cursor{At: t, ID: id, Back: back}.String()
	}
	first, last := rows[0], rows[len(rows)-1]
	if c.Back {
		links.Next = at(last, false)
		if more {
			links.Prev = at(first, true)
		}
		return rows, links
	}
	if more {
		links.Next = at(last, false)
	}
	if !c.IsZero() {
		links.Prev = at(first, true)
	}
	return rows, links
}
