// Package volume stores the Session Volume: each session's folder of files,
// shared by the session's app (the API), its functions (a WASI folder
// /volume) and the console's Files tab.
//
// Paths are checked here, once, for every door: a path is relative, made of
// "/"-separated names, none empty, "." or "..", none with a control
// character or a backslash, at most MaxPathBytes long and MaxDepth deep.
// A backslash is refused rather than taken as a separator or as a
// character: "a\b" would be a folder to a Windows client and a file name
// here, and a file the two see differently is worse than an error.
package volume

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Path limits.
const (
	MaxPathBytes = 1024 // a whole path, in bytes
	MaxNameBytes = 255  // one name between slashes, in bytes (most file systems' own limit)
	MaxDepth     = 16   // names in a path: 16 means 15 folders and a file
)

// PathError says what is wrong with a path, naming the rule it breaks.
type PathError struct {
	Path   string
	Code   string // path_required, path_too_long, path_too_deep, name_too_long, path_absolute, path_dot, path_empty_name, path_backslash, path_control, path_not_utf8
	Detail string
}

func (e *PathError) Error() string { return e.Detail }

// CheckPath reports why p is not a volume path, or nil.
func CheckPath(p string) error {
	bad := func(code, format string, args ...any) error {
		return &PathError{Path: p, Code: code, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case p == "":
		return bad("path_required", "path is required: a file's path in the volume, such as reports/summary.txt")
	case len(p) > MaxPathBytes:
		return bad("path_too_long", "path is %d bytes long; the limit is %d bytes", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return bad("path_not_utf8", "path must be UTF-8 text")
	case strings.HasPrefix(p, "/"):
		return bad("path_absolute", "path must be relative to the volume (no leading /): %q", p)
	}
	for _, r := range p {
		if r == '\\' {
			return bad("path_backslash", `path must not contain a backslash (\): names are separated by / only`)
		}
		if unicode.IsControl(r) || r == 0 {
			return bad("path_control", "path must not contain control characters (such as NUL, tab or newline); found U+%04X", r)
		}
	}
	names := strings.Split(p, "/")
	if len(names) > MaxDepth {
		return bad("path_too_deep", "path has %d names; the limit is %d (folders and the file)", len(names), MaxDepth)
	}
	for _, n := range names {
		switch {
		case n == "":
			return bad("path_empty_name", "path must not have an empty name (a doubled, leading or trailing /): %q", p)
		case n == "." || n == "..":
			return bad("path_dot", "path must not contain %q: every name is a real file or folder below the volume", n)
		case len(n) > MaxNameBytes:
			return bad("name_too_long", "a name in path is %d bytes long; the limit is %d bytes", len(n), MaxNameBytes)
		}
	}
	return nil
}
