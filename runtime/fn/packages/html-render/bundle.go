// Package htmlrender is the `html-render` function package: Debian's
// headless Chromium on the native engine (runtime/fn/native.go), driven over
// the DevTools protocol by a Python runner. Nothing is built: the bundle
// names the host's /usr/bin/python3 and carries the runner and the `subako`
// module (shared with the python package), which the sandbox sees read-only
// under /opt/subako.
package htmlrender

import (
	_ "embed"
	"encoding/json"

	"github.com/subako/subako/runtime/fn/packages/python"
)

//go:embed manifest.json
var manifest []byte

//go:embed runner.py
var runner string

//go:embed fonts.conf
var fonts string

// Manifest is the package's manifest.json.
func Manifest() []byte { return manifest }

// Bundle is the package's module for the native engine (fn.NativeBundle as JSON).
func Bundle() []byte {
	b, _ := json.Marshal(map[string]any{
		"command": []string{"/usr/bin/python3", "-I", "-B", "/opt/subako/runner.py"},
		"env":     []string{"PYTHONIOENCODING=utf-8", "XDG_CONFIG_HOME=/tmp", "XDG_CACHE_HOME=/tmp", "FONTCONFIG_FILE=/opt/subako/fonts.conf"},
		"files": map[string]string{
			"/opt/subako/runner.py":  runner,
			"/opt/subako/subako.py":  python.Module(),
			"/opt/subako/fonts.conf": fonts,
		},
	})
	return b
}
