package main

import (
	"context"
	"log/slog"

	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/packages/typst"
)

// wireTypst installs the shipped typst package (native engine) when its
// compiler is installed: $SUBAKO_TYPST_MODULES, or the checkout's
// runtime/fn/packages/typst/compiler/node_modules that `make deps` fills.
// The folder is recorded in the package's bundle when typst@1.0.0 is first
// installed, so it should not move afterwards.
func wireTypst(ctx context.Context, rt *runtime.Runtime, log *slog.Logger) {
	modules, err := typst.Modules(".")
	if err != nil {
		log.Warn("shipped function package typst not installed: its compiler is missing", "err", err)
		return
	}
	v, installed, err := rt.EnsureFunction(ctx, runtime.FunctionInstallInput{Manifest: typst.Manifest(), Wasm: typst.Bundle(modules)})
	switch {
	case err != nil:
		log.Error("shipped function package not installed", "package", "typst", "err", err)
	case installed:
		log.Info("shipped function package installed", "package", v.Name+"@"+v.Version, "engine", fn.EngineNative, "compiler", modules)
	}
}
