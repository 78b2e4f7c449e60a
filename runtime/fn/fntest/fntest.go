// Package fntest builds the shipped function packages and the engine's test
// modules for GOOS=wasip1, once per test binary, into a cache keyed by a hash of
// their sources, so suites that call functions stay fast after the first run.
//
// It is for tests only: it runs the go command and must never be imported by
// production code.
package fntest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Modules is a folder of built modules.
type Modules struct {
	// Dir holds packages/<name>.wasm and testdata/<name>.wasm, each beside its
	// <name>.manifest.json.
	Dir string
	// DataDir is a folder to use as fn.Config.DataDir, so compiled code is
	// cached across test runs too.
	DataDir string
}

var (
	once     sync.Once
	built    Modules
	buildErr error
)

// Build builds everything once per test binary and fails tb if it cannot.
func Build(tb testing.TB) Modules {
	tb.Helper()
	m, err := BuildAll()
	if err != nil {
		tb.Fatalf("fntest: %v", err)
	}
	return m
}

// BuildAll is Build for TestMain and examples, which have no testing.TB.
func BuildAll() (Modules, error) {
	once.Do(func() { built, buildErr = buildAll() })
	return built, buildErr
}

// Package returns a shipped package's module and manifest.
func (m Modules) Package(tb testing.TB, name string) (wasm, manifest []byte) {
	tb.Helper()
	return m.read(tb, "packages", name)
}

// TestModule returns one of runtime/fn/testdata's modules and its manifest.
func (m Modules) TestModule(tb testing.TB, name string) (wasm, manifest []byte) {
	tb.Helper()
	return m.read(tb, "testdata", name)
}

func (m Modules) read(tb testing.TB, kind, name string) ([]byte, []byte) {
	tb.Helper()
	wasm, err := os.ReadFile(filepath.Join(m.Dir, kind, name+".wasm"))
	if err != nil {
		tb.Fatalf("fntest: %v", err)
	}
	manifest, err := os.ReadFile(filepath.Join(m.Dir, kind, name+".manifest.json"))
	if err != nil {
		tb.Fatalf("fntest: %v", err)
	}
	return wasm, manifest
}

// fnDir is runtime/fn, found from this file so tests in any package work.
func fnDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func buildAll() (Modules, error) {
	src := fnDir()
	root := filepath.Dir(filepath.Dir(src))
	hash, err := sourceHash(root, src)
	if err != nil {
		return Modules{}, err
	}
	base, err := cacheBase()
	if err != nil {
		return Modules{}, err
	}
	m := Modules{Dir: filepath.Join(base, "build-"+hash), DataDir: base}
	if _, err := os.Stat(filepath.Join(m.Dir, "done")); err == nil {
		return m, nil
	}
	tmp, err := os.MkdirTemp(base, "tmp-")
	if err != nil {
		return Modules{}, fmt.Errorf("make build folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := buildInto(root, src, tmp); err != nil {
		return Modules{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "done"), nil, 0o644); err != nil {
		return Modules{}, fmt.Errorf("mark build: %w", err)
	}
	// Another test binary may have finished first; its result is as good.
	if err := os.Rename(tmp, m.Dir); err != nil && !exists(filepath.Join(m.Dir, "done")) {
		return Modules{}, fmt.Errorf("store build: %w", err)
	}
	pruneOld(base, m.Dir)
	return m, nil
}

// pruneOld removes builds of earlier sources, once a day old, so editing the
// packages does not fill the cache folder (about 35 MB a build).
func pruneOld(base, keep string) {
	old, _ := filepath.Glob(filepath.Join(base, "build-*"))
	for _, dir := range old {
		info, err := os.Stat(dir)
		if err == nil && dir != keep && time.Since(info.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(dir)
		}
	}
}

func buildInto(root, src, out string) error {
	script := exec.Command("sh", filepath.Join(src, "packages", "build.sh"), filepath.Join(out, "packages"))
	script.Dir = root
	if b, err := script.CombinedOutput(); err != nil {
		return fmt.Errorf("build packages: %w\n%s", err, b)
	}
	mods, err := os.ReadDir(filepath.Join(src, "testdata"))
	if err != nil {
		return fmt.Errorf("list test modules: %w", err)
	}
	for _, d := range mods {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(src, "testdata", d.Name())
		wasm := filepath.Join(out, "testdata", d.Name()+".wasm")
		cmd := exec.Command("go", "build", "-trimpath", "-o", wasm, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build test module %s: %w\n%s", d.Name(), err, b)
		}
		if err := copyFile(filepath.Join(dir, "manifest.json"), filepath.Join(out, "testdata", d.Name()+".manifest.json")); err != nil {
			return err
		}
	}
	return nil
}

// sourceHash covers everything a module is built from: the guest library, the
// packages, the test modules, the module's requirements and the toolchain.
func sourceHash(root, src string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, f := range []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")} {
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	for _, dir := range []string{"guest", "packages", "testdata"} {
		err := filepath.WalkDir(filepath.Join(src, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fmt.Fprintln(h, path)
			return hashFile(h, path)
		})
		if err != nil {
			return "", fmt.Errorf("hash sources: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hash sources: %w", err)
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// cacheBase is $SUBAKO_FN_CACHE, else the user's cache folder, else the temp one.
func cacheBase() (string, error) {
	base := os.Getenv("SUBAKO_FN_CACHE")
	if base == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(dir, "subako-fn")
		} else {
			base = filepath.Join(os.TempDir(), "subako-fn")
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("make cache folder: %w", err)
	}
	return base, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
