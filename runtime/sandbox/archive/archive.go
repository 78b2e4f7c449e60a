// Package archive turns a sandbox's /workspace folder into a tar + gzip
// archive and back, and keeps archives in a Store (a local folder now, object
// storage later, in the same format).
//
// It must never follow a symlink on the host, neither when archiving (the
// workspace's content is written by untrusted code) nor when restoring
// (archives can be downloaded, edited and come back), and never replace a
// good archive with a half-written one.
package archive

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// DefaultMaxBytes is the product's limit on a compressed archive: 256 MiB.
const DefaultMaxBytes int64 = 256 << 20

// DefaultMaxExpandedBytes bounds what a restore may write, so a small archive
// of zeros cannot fill the host's disk.
const DefaultMaxExpandedBytes int64 = 8 << 30

// DefaultMaxEntries bounds the files, folders and links of one archive, so
// a small archive of empty entries cannot take a restore's memory.
const DefaultMaxEntries = 1 << 20

// MountPoint is where the archived folder appears inside a sandbox; absolute
// symlinks below it point inside the workspace.
const MountPoint = "/workspace"

// systemPrefixes are the release's read-only folders. Absolute symlinks into
// them are kept: Python virtualenvs link bin/python to /usr/bin/python3, and
// refusing those would make every workspace with a venv unrestorable.
var systemPrefixes = []string{"/usr", "/bin", "/lib", "/lib64", "/sbin"}

// TooLargeError is returned when the compressed archive passes its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("archive: /workspace is over the %d MiB compressed limit (max_archive_bytes %d)", e.Limit>>20, e.Limit)
}

// ErrNotExist is returned by a Store for an id without an archive.
var ErrNotExist = errors.New("archive: no archive")

// entryName validates a name from a tar header and returns it cleaned.
// Empty means the archive's root folder itself.
func entryName(raw string) (string, error) {
	name := strings.TrimSuffix(raw, "/")
	switch {
	case strings.IndexByte(raw, 0) >= 0:
		return "", fmt.Errorf("archive: entry %q: name contains a NUL byte", raw)
	case strings.HasPrefix(raw, "/"):
		return "", fmt.Errorf("archive: entry %q: absolute paths are refused", raw)
	case strings.Contains(raw, `\`):
		return "", fmt.Errorf("archive: entry %q: backslashes are refused", raw)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("archive: entry %q: '..' is refused", raw)
		}
	}
	name = path.Clean(name)
	if name == "." {
		return "", nil
	}
	return name, nil
}

// linkAllowed says whether a symlink at name with this target stays inside
// the workspace (as seen from inside the sandbox) or points into the release.
func linkAllowed(name, target string) bool {
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return false
	}
	if path.IsAbs(target) {
		t := path.Clean(target)
		for _, p := range append([]string{MountPoint}, systemPrefixes...) {
			if t == p || strings.HasPrefix(t, p+"/") {
				return true
			}
		}
		return false
	}
	full := path.Join(path.Dir(name), target)
	return full != ".." && !strings.HasPrefix(full, "../")
}
