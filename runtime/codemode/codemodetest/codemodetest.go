// Package codemodetest gives tests code mode's WebAssembly guest: Install
// makes codemode build runtime/codemode/guest for GOOS=wasip1 with the go
// command when the first program runs, into a cache keyed by a hash of its
// sources, and keeps its compiled code on disk, so test binaries after the
// first start programs at once.
//
// It is for tests only: it runs the go command and must never be imported
// by production code.
package codemodetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/subako/subako/runtime/codemode"
)

// Install registers the on-demand build with codemode. Call it from an
// init or TestMain of every test package that runs programs.
func Install() {
	base, err := cacheBase()
	if err == nil {
		codemode.SetCacheDir(filepath.Join(base, "compiled"))
	}
	codemode.SetGuestLoader(func() ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return build(base)
	})
}

// codemodeDir is runtime/codemode, found from this file.
func codemodeDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func build(base string) ([]byte, error) {
	src := codemodeDir()
	root := filepath.Dir(filepath.Dir(src))
	hash, err := sourceHash(root, src)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(base, "guest-"+hash+".wasm")
	if b, err := os.ReadFile(out); err == nil {
		return b, nil
	}
	tmp, err := os.CreateTemp(base, "tmp-*.wasm")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp.Name(), "./runtime/codemode/guest")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build runtime/codemode/guest: %w\n%s", err, b)
	}
	// Another test binary may have finished first; its build is as good.
	if err := os.Rename(tmp.Name(), out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// sourceHash covers what the guest is built from: its folder, the wire
// package, the module's requirements and the toolchain.
func sourceHash(root, src string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, f := range []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")} {
		if err := hashFile(h, f); err != nil {
			return "", err
		}
	}
	for _, dir := range []string{"guest", "internal"} {
		err := filepath.WalkDir(filepath.Join(src, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fmt.Fprintln(h, path)
			return hashFile(h, path)
		})
		if err != nil {
			return "", fmt.Errorf("hash guest sources: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hash guest sources: %w", err)
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// cacheBase is $SUBAKO_FN_CACHE/codemode, else the user's cache folder, else the temp one.
func cacheBase() (string, error) {
	base := os.Getenv("SUBAKO_FN_CACHE")
	if base == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			base = filepath.Join(dir, "subako-fn")
		} else {
			base = filepath.Join(os.TempDir(), "subako-fn")
		}
	}
	base = filepath.Join(base, "codemode")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("make cache folder: %w", err)
	}
	return base, nil
}
