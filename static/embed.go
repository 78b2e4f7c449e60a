// Package static embeds the console's stylesheets, scripts and vendored
// libraries, and names each by a checksum so browsers may cache it forever.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sync"
)

//go:embed css js vendor favicon.svg
var files embed.FS

// FS is every static file, rooted at the static folder.
var FS fs.FS = files

var (
	sumsOnce sync.Once
	sums     map[string]string
)

// URL returns the path a page links to for a static file, with a short
// checksum of its content so a new build is fetched anew.
func URL(name string) string {
	sumsOnce.Do(func() {
		sums = map[string]string{}
		_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := fs.ReadFile(files, path)
			h := sha256.Sum256(b)
			sums[path] = hex.EncodeToString(h[:6])
			return nil
		})
	})
	return "/static/" + name + "?v=" + sums[name]
}
