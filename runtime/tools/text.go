package tools

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// BadText says what makes s unfit to store, or "" when it is fine. Stored
// text must be valid UTF-8 without NUL: PostgreSQL refuses both (a text
// column holds no NUL, and half a character is not UTF-8), and SQLite would
// keep what PostgreSQL cannot, so the same input must be refused on both.
func BadText(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character (\\u0000), which cannot be stored"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}

// BadJSONText is BadText for a JSON string: raw is the text it was read
// from (quotes, escapes and any separators around it), s the decoded
// value. encoding/json turns invalid UTF-8 and lone surrogate escapes
// (\ud800) into U+FFFD without a word; a U+FFFD that raw does not hold
// itself, as a character or as \ufffd, is one of those.
func BadJSONText(raw []byte, s string) string {
	if why := BadText(s); why != "" {
		return why
	}
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	if n := strings.Count(s, "\uFFFD"); n > 0 {
		sent := bytes.Count(raw, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(raw), []byte(`\ufffd`))
		if n > sent {
			return "holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff), which is not a character"
		}
	}
	return ""
}

// JoinPath appends an object key to a JSON path as Parse names fields:
// a.b for plain keys, a["x.y"] otherwise.
func JoinPath(path, key string) string { return joinPath(path, key) }

// IndexPath appends an array index to a JSON path: a[3].
func IndexPath(path string, i int) string { return indexPath(path, i) }
