package volume

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPath(t *testing.T) {
	for _, c := range []struct{ path, code string }{
		{"a.txt", ""}, {"reports/2026/summary one.txt", ""}, {"日本語/ファイル.md", ""}, {".hidden", ""}, {"a..b", ""},
		{"", "path_required"}, {"/etc/passwd", "path_absolute"}, {"..", "path_dot"}, {"a/../b", "path_dot"}, {"./a", "path_dot"},
		{"a//b", "path_empty_name"}, {"a/", "path_empty_name"}, {`a\b`, "path_backslash"}, {`..\..\x`, "path_backslash"},
		{"a\x00b", "path_control"}, {"a\nb", "path_control"}, {"a\x7fb", "path_control"}, {"a\u0085b", "path_control"},
		{"\xff", "path_not_utf8"}, {strings.Repeat("a", 256), "name_too_long"}, {strings.Repeat("a/", 16) + "a", "path_too_deep"},
		{strings.Repeat("a", 1025), "path_too_long"},
	} {
		err := CheckPath(c.path)
		var pe *PathError
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%q refused: %v", c.path, err)
		case c.code != "" && (!errors.As(err, &pe) || pe.Code != c.code):
			t.Errorf("%q: %v, want %s", c.path, err, c.code)
		case c.code != "" && !strings.Contains(pe.Detail, "path"):
			t.Errorf("%q: the detail %q does not name the field", c.path, pe.Detail)
		}
	}
}

// A path CheckPath takes stays below the folder it is joined to.
func FuzzCheckPathStaysBelow(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a/../../b", "/a", `a\..\b`, "a/./b", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckPath(p) != nil {
			return
		}
		root := "/srv/volumes/ses_x/files"
		joined := filepath.Join(root, p)
		if !strings.HasPrefix(joined, root+"/") || filepath.Clean(joined) != root+"/"+p {
			t.Fatalf("%q accepted but joins to %q", p, joined)
		}
	})
}
