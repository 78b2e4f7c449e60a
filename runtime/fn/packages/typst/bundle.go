// Package typst is the `typst` function package: Typst markup to PDF on
// the native engine (runtime/fn/native.go). The compiler is typst.ts's napi
// build (npm @myriaddreamin/typst-ts-node-compiler 0.7.0, pinned in
// compiler/package-lock.json and installed by `make deps`), run by the
// host's /usr/bin/node; its node_modules folder is bound read-only into the
// sandbox at /opt/subako/typst/node_modules.
package typst

import (
	_ "embed"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

//go:embed manifest.json
var manifest []byte

//go:embed runner.js
var runner string

// Manifest is the package's manifest.json.
func Manifest() []byte { return manifest }

// The folder in the sandbox the compiler's node_modules is bound to.
const guestModules = "/opt/subako/typst/node_modules"

// compilerModule is the compiler's platform build inside node_modules.
const compilerModule = "@myriaddreamin/typst-ts-node-compiler-linux-x64-gnu"

// Modules finds the compiler's node_modules folder: $SUBAKO_TYPST_MODULES,
// else runtime/fn/packages/typst/compiler/node_modules below dir or one of
// its parents (a checkout where `make deps` ran). It fails saying how to
// install it.
func Modules(dir string) (string, error) {
	if m := os.Getenv("SUBAKO_TYPST_MODULES"); m != "" {
		return check(m)
	}
	dir, _ = filepath.Abs(dir)
	for d := dir; ; d = filepath.Dir(d) {
		m := filepath.Join(d, "runtime/fn/packages/typst/compiler/node_modules")
		if _, err := os.Stat(m); err == nil {
			return check(m)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", errors.New("typst: the compiler is not installed: run `make deps` (npm ci in runtime/fn/packages/typst/compiler) or set SUBAKO_TYPST_MODULES to its node_modules folder")
}

func check(m string) (string, error) {
	m, _ = filepath.Abs(m)
	if _, err := os.Stat(filepath.Join(m, compilerModule)); err != nil {
		return "", errors.New("typst: " + m + " has no " + compilerModule + ": run npm ci in runtime/fn/packages/typst/compiler")
	}
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		return "", errors.New("typst: /usr/bin/node is not installed (apt-get install nodejs)")
	}
	return m, nil
}

// Bundle is the package's module for the native engine (fn.NativeBundle as
// JSON), with the compiler's node_modules folder modules bound read-only.
func Bundle(modules string) []byte {
	b, _ := json.Marshal(map[string]any{
		// The compiler prints its diagnostics (with line and column) on fd 2:
		// they go to a file the runner reads back into the answer. SIGXFSZ
		// is ignored so a PDF over the volume's file limit (RLIMIT_FSIZE)
		// is a write error the runner answers, not a killed node.
		"command": []string{"/bin/sh", "-c", "trap '' XFSZ; exec /usr/bin/node /opt/subako/typst/runner.js 2>/tmp/.typst-errors"},
		"files":   map[string]string{"/opt/subako/typst/runner.js": runner},
		"binds":   []map[string]string{{"host": modules, "guest": guestModules}},
	})
	return b
}
