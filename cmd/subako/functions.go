package main

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
)

// shippedPackages holds the function packages `make build` built into
// fnpackages/ (<name>.wasm beside <name>.manifest.json). A checkout where
// they were not built embeds only the folder's README.
//
//go:embed fnpackages
var shippedPackages embed.FS

// wireFunctions starts the process's one function engine, with compiled code
// cached in the data folder so a restart does not recompile, gives it to the
// runtime, loads every stored package, and installs the shipped packages that
// are missing. A package that fails is logged; the server runs without it.
// allowPrivate is --egress-allow-private, for http_fetch.
func wireFunctions(ctx context.Context, rt *runtime.Runtime, dataDir string, allowPrivate bool, capacity fn.Capacity, log *slog.Logger) error {
	e, err := fn.New(ctx, fn.Config{DataDir: dataDir, AllowPrivate: allowPrivate, Capacity: capacity})
	if err != nil {
		return err
	}
	rt.SetFunctionEngine(e)
	start := time.Now()
	n, err := rt.LoadFunctions(ctx)
	if err != nil {
		log.Error("function packages not loaded: their calls fail with this reason", "err", err)
	}
	log.Info("function packages loaded", "count", n, "ms", time.Since(start).Milliseconds())
	installShipped(ctx, rt, shippedPackages, log)
	wireNative(ctx, rt, e, log)
	wireTypst(ctx, rt, log)
	return nil
}

// shipped is one package embedded in the binary.
type shipped struct {
	name           string
	wasm, manifest []byte
}

// shippedList reads fnpackages/ of fsys: each <name>.wasm with its manifest.
func shippedList(fsys fs.FS) ([]shipped, error) {
	entries, err := fs.ReadDir(fsys, "fnpackages")
	if err != nil {
		return nil, fmt.Errorf("read shipped function packages: %w", err)
	}
	var out []shipped
	for _, ent := range entries {
		name, ok := strings.CutSuffix(ent.Name(), ".wasm")
		if !ok || ent.IsDir() {
			continue
		}
		s := shipped{name: name}
		if s.wasm, err = fs.ReadFile(fsys, path.Join("fnpackages", ent.Name())); err != nil {
			return nil, fmt.Errorf("read shipped package %s: %w", name, err)
		}
		if s.manifest, err = fs.ReadFile(fsys, path.Join("fnpackages", name+".manifest.json")); err != nil {
			return nil, fmt.Errorf("shipped package %s has no manifest: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// installShipped installs, as the server, each embedded package whose name
// and version are not installed yet. An installed version is never replaced.
func installShipped(ctx context.Context, rt *runtime.Runtime, fsys fs.FS, log *slog.Logger) {
	list, err := shippedList(fsys)
	if err != nil {
		log.Error("shipped function packages not installed", "err", err)
		return
	}
	if len(list) == 0 {
		log.Warn("this binary embeds no shipped function packages (jq, html, javascript, github): build it with `make build` to include them")
		return
	}
	for _, s := range list {
		v, installed, err := rt.EnsureFunction(ctx, runtime.FunctionInstallInput{Manifest: s.manifest, Wasm: s.wasm})
		sum := sha256.Sum256(s.wasm)
		switch {
		case err != nil:
			log.Error("shipped function package not installed", "package", s.name, "err", err)
		case installed:
			log.Info("shipped function package installed", "package", v.Name+"@"+v.Version, "compile_ms", v.CompileMS)
		case v.SHA256 != hex.EncodeToString(sum[:]):
			log.Info("shipped function package kept as installed: this binary embeds another build of the same version",
				"package", v.Name+"@"+v.Version)
		}
	}
}
