// Package python is the `python` function package: Debian's CPython on the
// native engine (runtime/fn/native.go). Nothing is built: the bundle names
// the host's /usr/bin/python3 and carries the runner and the `subako`
// module, which the sandbox sees read-only under /opt/subako.
package python

import (
	_ "embed"
	"encoding/json"
)

//go:embed manifest.json
var manifest []byte

//go:embed runner.py
var runner string

//go:embed subako.py
var module string

// Manifest is the package's manifest.json.
func Manifest() []byte { return manifest }

// Bundle is the package's module for the native engine (fn.NativeBundle as JSON).
func Bundle() []byte {
	b, _ := json.Marshal(map[string]any{
		// -I: isolated (no PYTHON* variables, no user site); -B: no .pyc written.
		"command": []string{"/usr/bin/python3", "-I", "-B", "/opt/subako/runner.py"},
		"env":     []string{"PYTHONIOENCODING=utf-8", "MPLCONFIGDIR=/tmp"},
		"files": map[string]string{
			"/opt/subako/runner.py": runner,
			"/opt/subako/subako.py": module,
		},
	})
	return b
}

// Module is the `subako` module's source (subako.py), which other native
// packages with a Python runner (html-render) ship too.
func Module() string { return module }
